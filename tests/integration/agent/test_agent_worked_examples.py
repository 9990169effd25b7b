"""The design's worked examples, end to end."""

from __future__ import annotations

import json
from collections.abc import Callable

from saber.agent import Agent
from saber.events import NodeDone, NodeStart, Plan, RaceWon
from saber.testing import ScriptedModel

K8S_NOTES = """# Kubernetes Service

A Service exposes a set of Pods behind one stable address.

## ClusterIP
The default type. The Service gets a virtual IP reachable only inside the cluster.

## NodePort
Opens the same port on every node and forwards it to the Service.

## LoadBalancer
Asks the cloud provider for an external load balancer that forwards to the Service.

## ExternalName
Maps the Service to a DNS name with a CNAME record; no proxying.
"""

REPORT = """# K8s Service 类型调研报告

## 摘要
Kubernetes Service 有四种类型：ClusterIP、NodePort、LoadBalancer 和 ExternalName（来源：知识库）。

## 分析
ClusterIP 只在集群内可达；NodePort 在每个节点开放端口；LoadBalancer 依赖云厂商；ExternalName 通过 CNAME 映射。

## 建议
集群内部服务用 ClusterIP，对外服务优先 LoadBalancer。

## 下一步
补充 Ingress 与 Gateway API 的对比。
"""


async def test_research_report_is_saved_and_found_again(make_agent: Callable[..., Agent]) -> None:
    query = "帮我调研一下 K8s service 的几种类型，写成报告保存"
    plan = json.dumps([
        {"id": "n1", "type": "sub_agent", "agent": "research_agent", "goal": "调研 K8s service 的几种类型", "depends_on": []},
        {"id": "n2", "type": "sub_agent", "agent": "writer_agent", "goal": "生成 Markdown 报告", "depends_on": ["n1"]},
        {"id": "n3", "type": "sub_agent", "agent": "doc_agent", "goal": "保存到文档库并入 RAG", "depends_on": ["n2"]},
    ], ensure_ascii=False)
    model = ScriptedModel([
        plan,
        '["K8s service 类型", "ClusterIP NodePort LoadBalancer ExternalName"]',
        "Findings: 四种类型（来源：rag_search）。",
        REPORT,
        "我调研了 K8s service 的四种类型，报告已保存并纳入知识库。",
    ])
    agent = make_agent(model)
    engine = agent.services.knowledge
    assert engine is not None
    engine.ingest_text("Kubernetes Service types", K8S_NOTES, source="k8s.md")

    answer = await agent.ask(query, user_id="u1")

    assert answer.mode == "react"
    plan_event = next(e for e in answer.events if isinstance(e, Plan))
    assert [n["agent"] for n in plan_event.nodes] == ["research_agent", "writer_agent", "doc_agent"]
    done = {e.id: e for e in answer.events if isinstance(e, NodeDone)}
    assert {k: v.status for k, v in done.items()} == {"n1": "done", "n2": "done", "n3": "done"}
    order = [e.id for e in answer.events if isinstance(e, NodeStart)]
    assert order == ["n1", "n2", "n3"]
    assert any(e.type == "rag_result" for e in answer.events), "research searched the knowledge base"
    model.assert_complete()
    assert answer.answer == "我调研了 K8s service 的四种类型，报告已保存并纳入知识库。"

    saved = [d for d in engine.list_documents() if d.title == "K8s Service 类型调研报告"]
    assert len(saved) == 1 and saved[0].indexed
    rag_search = agent.registry.get("rag_search")
    assert rag_search is not None
    found = await rag_search.run({"query": "K8s Service 类型调研报告 建议"})
    assert "K8s Service 类型调研报告" in found


async def test_no_model_time_and_weather_run_in_parallel_and_report_honestly(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(None)
    answer = await agent.ask("现在几点，北京天气怎么样", user_id="u1")
    assert answer.mode == "react" and answer.model is None
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "rules"
    tools = {n["id"]: n["tool"] for n in plan.nodes}
    assert sorted(tools.values()) == ["get_time", "get_weather"]
    first_done = next(i for i, e in enumerate(answer.events) if isinstance(e, NodeDone))
    started_before = {e.id for e in answer.events[:first_done] if isinstance(e, NodeStart)}
    assert started_before == set(tools), "both tools start before either finishes"
    status = {tools[e.id]: e for e in answer.events if isinstance(e, NodeDone)}
    assert status["get_time"].status == "done"
    assert status["get_weather"].status == "failed" and "could not be reached" in (status["get_weather"].error or "")
    assert "Current time in" not in answer.answer and "北京现在是" in answer.answer  # rendered in Chinese
    assert answer.answer.count("天气服务暂时无法访问") == 1
    assert answer.answer.count("并非语言模型生成") == 1
    assert not [e for e in answer.events if isinstance(e, RaceWon)]
