"""What a plan left out, said plainly: a cut plan and the steps validation refused.

A plan can be cut — by the repetition guard, by a token limit, by ``planner_max_nodes``, by a
stream that broke — and steps can be refused (an unknown tool, bad arguments, a cycle through a
placeholder). Either way the answer covers less than was asked for, so the ``plan`` event
(``truncated``, ``dropped_nodes``), the task's checkpoint (``plan_truncated`` in its metadata,
shown by ``saber tasks``) and the answer itself (a last line) say so, with the number of steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from saber.agent.prompts import Lang
from saber.events import Plan
from saber.planner import ParsedPlan

TRUNCATED_META = "plan_truncated"
"""Checkpoint metadata key: ``{"reason", "dropped_nodes"}`` when the plan was cut."""

_DROPPED = re.compile(r"^(?P<id>\S+) dropped: (?P<why>.+)$")
_REPEATS = "it repeats"
"""A step dropped as a word-for-word repeat: nothing is missing, nothing to replan."""
_LOOPING = "kept repeating"
"""The repetition guard cut a model stuck in a loop: asking it again would not help."""


@dataclass(frozen=True, kw_only=True)
class PlanReport:
    truncated: str | None = None
    """Why the plan is not all the model wrote or meant (None when it is whole)."""
    dropped_nodes: int = 0
    """Nodes lost to the cut (begun but unfinished, past the cap, written but not run)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Node id → why validation dropped it (an unknown tool…)."""
    stopped: str | None = None
    """Why the model's output ended before its plan did (a token limit, a broken stream, the
    repetition guard), when it did: unlike a cut at ``planner_max_nodes``, a loss worth a replan."""

    @property
    def gaps(self) -> dict[str, str]:
        """What the replanner is asked to make up for, by key: the cut, and each refused step."""
        gaps = {f"refused:{i}": f"planned step {i} could not run: {why}" for i, why in self.refused.items()
                if not why.startswith(_REPEATS)}
        if self.stopped and _LOOPING not in self.stopped:
            lost = f"{self.dropped_nodes} planned step(s) were lost" if self.dropped_nodes else "steps after it were lost"
            gaps["cut"] = f"the plan was cut off ({self.stopped}); {lost}: add the steps still missing"
        return gaps

    @property
    def meta(self) -> dict[str, Any]:
        return {"reason": self.truncated, "dropped_nodes": self.dropped_nodes}

    def note(self, lang: Lang, *, replanned: bool = False) -> str:
        """The answer's last lines, or "" when nothing was left out. ``replanned``: the planner was
        asked again for what the plan left out, and added steps."""
        lines: list[str] = []
        zh = lang == "zh"
        if replanned and (self.stopped or self.refused):
            lines.append("注意：第一次的计划不完整（" + _zh(self.stopped or "有步骤无法执行") + "），已请规划器补充缺少的步骤。"
                         if zh else
                         f"Note: the first plan was incomplete ({self.stopped or 'steps could not run'}); the planner "
                         "was asked again for the missing steps.")
            return "\n\n" + "\n".join(lines)
        if self.truncated:
            if zh:
                lost = f"{self.dropped_nodes} 个计划步骤被丢弃、没有执行" if self.dropped_nodes else "之后的步骤没有执行"
                lines.append(f"注意：执行计划被截断（{_zh(self.truncated)}）；{lost}，回答只涵盖已执行的步骤。")
            else:
                lost = f"{self.dropped_nodes} planned step(s) were dropped and " if self.dropped_nodes else "steps after it were "
                lines.append(f"Note: the plan was cut off ({self.truncated}); {lost}not run, so this answer covers only "
                             "the steps that ran.")
        if self.refused:
            reasons = [f"{i}: {_clip(why)}" for i, why in self.refused.items()]
            shown = "; ".join(reasons[:3]) + (f"; … {len(reasons) - 3} more" if len(reasons) > 3 else "")
            lines.append(f"注意：计划中有 {len(self.refused)} 个步骤无法执行，已跳过（{shown}）。" if zh else
                         f"Note: {len(self.refused)} planned step(s) could not run and were skipped ({shown}).")
        return "\n\n" + "\n".join(lines) if lines else ""


def plan_report(plan: ParsedPlan | None, *, stopped: str | None = None, lost: int = 0) -> PlanReport:
    """What ``plan`` left out. ``stopped`` says why the model's output ended early (the guard cut
    it, a token limit, a broken stream), ``lost`` counts complete nodes it wrote that were not run
    (a broken stream's, replaced by the rule planner's)."""
    cut = plan.cut if plan is not None else None
    complete_json = plan is not None and plan.last_node_closed and cut is None
    early = stopped if not complete_json or lost else None
    reasons = [r for r in (early, cut) if r]
    refused = {m.group("id"): m.group("why") for w in (plan.warnings if plan is not None else [])
               if (m := _DROPPED.match(w))}
    return PlanReport(truncated="; ".join(reasons) or None,
                      dropped_nodes=(plan.dropped_nodes if plan is not None else 0) + lost, refused=refused,
                      stopped=early)


def all_refused(warnings: list[str]) -> ParsedPlan | None:
    """A plan whose every step validation refused (the parser's error ``warnings`` name them), as
    an empty plan carrying why: a replan can be told what to fix, where the rule planner would
    only guess. None when no step was refused (the output was junk)."""
    if not any(_DROPPED.match(w) for w in warnings):
        return None
    return ParsedPlan(nodes=[], format="refused", warnings=list(warnings), last_node_closed=True)


def plan_event(plan: ParsedPlan, source: str, report: PlanReport, tools: list[str] | None) -> Plan:
    """The ``plan`` event, saying what ``report`` says the plan left out."""
    return Plan(format=plan.format, nodes=[n.to_dict() for n in plan.nodes], warnings=list(plan.warnings), source=source,
                tools=tools, truncated=report.truncated, dropped_nodes=report.dropped_nodes, answer=plan.answer)


def stop_reason(cut: str | None, finish_reason: str | None) -> str | None:
    """Why a planner's output ended early, from its stream's ``cut`` or its ``finish_reason``."""
    if cut:
        return f"the planner's output was cut: {cut}"
    if finish_reason == "length":
        return "the planner's output reached its token limit"
    return None


_ZH = [
    (re.compile(r"it has (\d+) nodes, over the limit of (\d+)"), r"计划有 \1 个节点，超过上限 \2"),
    (re.compile(r"the output ends inside the plan"), "输出在计划中途结束"),
    (re.compile(r"the planner's output reached its token limit"), "规划输出达到了 token 上限"),
    (re.compile(r"the planner's output was cut: (.+?)(?=; |$)"), r"规划输出被截断：\1"),
    (re.compile(r"the planner stream broke: (.+?)(?=; |$)"), r"规划输出的流中断：\1"),
]


def _zh(reason: str) -> str:
    """The reasons this module writes, in Chinese (a detail from elsewhere stays as it is)."""
    for pattern, chinese in _ZH:
        reason = pattern.sub(chinese, reason)
    return reason.replace("; ", "；")


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
