"""The keywords rules read, in one table: the router and the rule planner both use it.

Chinese alternatives match as substrings; ASCII ones on word boundaries, so "time" does not
fire on "sometimes". An alternative written ``re:...`` is a regular expression, for the words
that need an exception (研究 but not 研究生, "time" but not "time complexity"). Extend a pattern
here and both the router and the rule planner follow.
"""

from __future__ import annotations

import re

from saber.language import NOT_TIME_AFTER


def words(*alternatives: str) -> re.Pattern[str]:
    parts = [
        a[3:] if a.startswith("re:") else re.escape(a) if not a.isascii() else rf"\b{re.escape(a)}\b"
        for a in alternatives
    ]
    return re.compile("|".join(parts), re.IGNORECASE)


_NOT_TIME_TOPIC = r"(?!\s*(?:complexity|complexities|series|frame|frames|line|lines|out|limit|travel|machine))"
_NOT_TIME_IDIOM = (r"(?<!\bat a )(?<!\bat the same )(?<!\bone at a )(?<!\bevery )(?<!\beach )(?<!\bfirst )"
                   r"(?<!\blast )(?<!\bnext )(?<!\bfrom )(?<!\bsome )(?<!\bany )(?<!\bspare )(?<!\bfree )(?<!\bfull )"
                   r"(?<!\bpart )(?<!\bno )(?<!\bhard )(?<!\bgood )(?<!\bbig )(?<!\bon )(?<!\bin )")
"""Idioms with "time" that do not ask the time ("at a time", "every time", "on time")."""
TIME = words("几点", f"re:时间(?!{NOT_TIME_AFTER})", "日期", "星期几", "时区", "what time",
             "time is it", "current time", "date today", "today's date", "timezone",
             rf"re:{_NOT_TIME_IDIOM}\btime\b{_NOT_TIME_TOPIC}", "clock")
WEATHER = words("天气", "气温", "下雨", "下雪", "温度", "更冷", "更热", "冷不冷", "热不热", "多冷", "多热",
                "weather", "temperature", "forecast", "rain", "raining", "snow", "snowing", "re:\\bhow (?:hot|cold|warm)\\b",
                "sunny", "humid", "humidity")
SEARCH = words("搜索", "搜一下", "查一下", "查查", "查询", "帮我查", "最新", "新闻", "search", "look up", "lookup", "google",
               "news", "latest")
"""Explicit requests to search."""
QUESTION = words("是什么", "是谁", "介绍一下", "为什么", "怎么做", "如何做", "如何学习", "what is", "what are", "who is",
                 "how to", "how do", "why")
"""Open questions: worth a search only when no other rule claimed the query."""
SUMMARY = words("总结", "汇总", "summarize", "summarise", "summary")
KNOWLEDGE = words("知识库", "文档库", "我的文档", "资料", "笔记", "knowledge base", "my documents", "my notes", "my files")
RESEARCH = words("调研", "re:研究(?!生|所|院|员|室|领域|方向|表明|发现|显示)", "research", "investigate")
DOCUMENT = words("报告", "文档", "方案", "report", "document", "proposal", "write-up", "white paper")
PRODUCE = words("写", "生成", "总结", "保存", "整理", "分析", "write", "generate", "draft", "save", "create", "produce",
                "analyse", "analyze")
SAVE = words("保存", "落库", "写入", "文档库", "知识库", "存档", "save", "store it", "archive", "knowledge base")


def is_research_request(query: str) -> bool:
    """调研/研究, or a report/document/plan to write, generate, summarise or save."""
    return bool(RESEARCH.search(query) or (DOCUMENT.search(query) and PRODUCE.search(query)))

SMALL_TALK = re.compile(
    r"^(?:(?:hi|hello|hey|yo|howdy|hiya|greetings|good (?:morning|afternoon|evening|night)|bye|goodbye|see you(?: later)?|"
    r"thanks?(?: you)?(?: so much| a lot| very much)?|thx|ty|cheers|much appreciated|many thanks|great|ok(?:ay)?|cool|nice|"
    r"sure|yes|no|yep|nope|lol|haha|how are you|how's it going|hows it going|what's up|whats up|sup|nice to meet you|"
    r"who are you|what can you do|can you help me|i'm back|i am back|i'm bored|i am bored|tell me a joke|"
    r"你好|您好|嗨|哈喽|早上好|早安|中午好|下午好|晚上好|晚安|再见|拜拜|谢谢你?|谢了|谢啦|多谢|太感谢了|感谢帮忙|感谢|辛苦了|好的|好|嗯+|哈+|"
    r"你是谁|你能做什么|你会什么|讲个笑话吧?|最近怎么样|我有点累了|在吗|没事了?)"
    r"(?:[\s,，.。!！?？~～]+(?:there|you|buddy|friend|a lot|so much|that helped|for your help|呀|啊|呢|哦|了)?)*)+$",
    re.IGNORECASE,
)
"""Greetings, thanks, farewells and acknowledgements: the whole query, nothing asked."""
STATEMENT = re.compile(r"^(?:i live in|i'm from|i am from|my name is|call me|我住在|我在|我来自|我叫|叫我)\s*\S.{0,40}$", re.IGNORECASE)
"""Telling the agent about oneself: chat (the memory takes note), never a knowledge-base lookup."""


def is_small_talk(query: str) -> bool:
    text = query.strip()
    return len(text) <= 80 and bool(SMALL_TALK.match(text) or STATEMENT.match(text))
