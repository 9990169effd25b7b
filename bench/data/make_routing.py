"""Writes routing.jsonl: the labelled routing and argument set (run once; the file is committed).

Each line: id, category, lang, query, mode (expected route), calls (expected tool/sub-agent
calls: {"tool", "place"} where place is the place the call must be about, null for "none named"),
plus optional prefs (preferences set before asking), topic (research topic), expect ("error:<place>",
"nothing-relevant", "uses-preference:<place>", "uses-default").
Written by hand from the failures reported in issue #12 and ordinary requests, before any tuning.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

rows: list[dict[str, Any]] = []


def add(category: str, query: str, mode: str, calls: list[dict[str, Any]] | None = None, **extra: Any) -> None:
    lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in query) else "en"
    rows.append({"id": f"{category}-{sum(r['category'] == category for r in rows) + 1:03d}", "category": category,
                 "lang": lang, "query": query, "mode": mode, "calls": calls or [], **extra})


def t(place: str | None) -> dict[str, Any]:
    return {"tool": "get_time", "place": place}


def w(place: str | None) -> dict[str, Any]:
    return {"tool": "get_weather", "place": place}


S = {"tool": "search_web", "place": None}

# -- small talk and statements (knowledge base loaded: must still be chat) ----------------------
for q in ["hello", "hi", "hello there", "hey, how are you?", "good morning", "good evening!", "what's up?",
          "nice to meet you", "who are you?", "can you help me?", "I live in Tokyo", "I'm bored",
          "tell me a joke", "how's it going", "bye", "see you later",
          "你好", "您好", "早上好", "晚上好", "你是谁？", "你能做什么？", "我住在杭州", "讲个笑话吧", "我有点累了",
          "最近怎么样", "再见", "哈哈哈", "好的", "嗯嗯"]:
    add("smalltalk", q, "chat")

# -- thanks ---------------------------------------------------------------------------------------
for q in ["thanks!", "thank you", "thanks a lot", "thank you so much, that helped", "cheers", "great, thanks",
          "ok thanks", "much appreciated",
          "谢谢", "谢谢你", "多谢", "太感谢了", "好的，谢谢", "辛苦了", "感谢帮忙", "谢啦"]:
    add("thanks", q, "chat")

# -- general knowledge (nothing in the knowledge base about it) -----------------------------------
for q in ["What is the capital of Australia?", "Who wrote Pride and Prejudice?", "How many legs does a spider have?",
          "Explain photosynthesis in one sentence", "What is the boiling point of water at sea level?",
          "Who painted the Mona Lisa?", "What's the difference between a virus and a bacterium?",
          "How far is the Moon from the Earth?", "What is a prime number?", "Translate 'good night' into French",
          "Give me a recipe for pancakes", "What does HTTP stand for?", "Why is the sky blue?",
          "What is the largest ocean?", "Recommend a good science fiction novel",
          "澳大利亚的首都是哪里？", "《红楼梦》的作者是谁？", "光合作用是什么？", "一年有多少天？", "水的沸点是多少度？",
          "帮我写一首关于秋天的诗", "什么是质数？", "蜘蛛有几条腿？", "推荐一本科幻小说", "为什么天空是蓝色的？",
          "长城有多长？", "如何煮一碗好吃的面？", "解释一下相对论", "世界上最大的海洋是哪个？", "把“晚安”翻译成英文"]:
    add("general", q, "chat")

# -- one tool, a place in the built-in table -----------------------------------------------------
for q, p in [("What time is it in Tokyo?", "Tokyo"), ("what's the time in London right now", "London"),
             ("current time in New York", "New York"), ("time in Paris please", "Paris"),
             ("What time is it in Sydney?", "Sydney"), ("clock in Singapore", "Singapore"),
             ("What's the date today in Los Angeles?", "Los Angeles"), ("what time is it in berlin", "Berlin"),
             ("东京现在几点", "Tokyo"), ("纽约现在几点了？", "New York"), ("伦敦时间", "London"),
             ("北京现在几点", "Beijing"), ("现在巴黎是几点", "Paris"), ("悉尼现在是几点钟", "Sydney"),
             ("迪拜现在几点", "Dubai"), ("莫斯科今天星期几", "Moscow")]:
    add("single_tool", q, "tool", [t(p)])
for q, p in [("What's the weather in Beijing?", "Beijing"), ("weather in Paris", "Paris"),
             ("Is it raining in London?", "London"), ("temperature in Tokyo today", "Tokyo"),
             ("weather forecast for Seoul", "Seoul"), ("How's the weather in San Francisco?", "San Francisco"),
             ("Will it snow in Moscow?", "Moscow"), ("weather in Toronto", "Toronto"),
             ("北京天气怎么样", "Beijing"), ("上海今天天气如何？", "Shanghai"), ("深圳会下雨吗", "Shenzhen"),
             ("杭州的气温", "Hangzhou"), ("成都天气", "Chengdu"), ("东京天气怎么样", "Tokyo"),
             ("广州今天多少度？温度高吗", "Guangzhou"), ("香港天气", "Hong Kong")]:
    add("single_tool", q, "tool", [w(p)])
for q in ["search the web for the latest Python release", "look up news about SpaceX", "搜索一下最新的 AI 新闻",
          "帮我查一下 Rust 1.80 的新特性", "google the best hiking trails", "查一下今天的新闻"]:
    add("single_tool", q, "tool", [S])

# -- one tool, no place named: the preference or the default, and the answer says which ----------
for q in ["What time is it?", "what's the date today?", "现在几点了", "今天星期几", "现在几点？"]:
    add("no_place", q, "tool", [t(None)], expect="uses-default")
for q, prefs, p in [("现在几点了", {"city": "杭州"}, "Hangzhou"), ("今天天气怎么样", {"city": "杭州"}, "Hangzhou"),
                    ("what's the weather like today?", {"city": "London"}, "London"),
                    ("what time is it now?", {"city": "Tokyo"}, "Tokyo"), ("会下雨吗", {"city": "成都"}, "Chengdu"),
                    ("今天气温多少", {"city": "北京"}, "Beijing")]:
    add("no_place", q, "tool", [t(p) if ("几点" in q or "time" in q) else w(p)], prefs=prefs,
        expect=f"uses-preference:{p}")

# -- several tools ---------------------------------------------------------------------------------
for q, p in [("北京天气和时间", "Beijing"), ("东京现在几点，天气怎么样", "Tokyo"),
             ("What's the time and weather in London?", "London"), ("weather and time in Paris", "Paris"),
             ("上海现在几点？天气如何？", "Shanghai"), ("Tell me the current time and the forecast for Seoul", "Seoul"),
             ("纽约的时间和气温", "New York"), ("Sydney: what time is it and is it raining?", "Sydney"),
             ("深圳的天气和当地时间", "Shenzhen"), ("time and temperature in Berlin", "Berlin"),
             ("Reykjavik weather and local time", "Reykjavik"), ("大理的天气和时间", "大理")]:
    add("several_tools", q, "react", [t(p), w(p)])
for q, p in [("搜索一下东京的新闻，再告诉我东京现在几点", "Tokyo"), ("look up news about Paris and tell me the time there", "Paris")]:
    add("several_tools", q, "react", [t(p), S])

# -- several entities -----------------------------------------------------------------------------
for q, ps in [("What time is it in London and Paris?", ["London", "Paris"]),
              ("东京和纽约现在几点", ["Tokyo", "New York"]), ("北京和上海的天气", ["Beijing", "Shanghai"]),
              ("weather in Tokyo and Osaka", ["Tokyo", "Osaka"]), ("现在伦敦、巴黎和柏林几点了", ["London", "Paris", "Berlin"]),
              ("compare the weather in Sydney and Melbourne", ["Sydney", "Melbourne"]),
              ("time in New York, Chicago and Los Angeles", ["New York", "Chicago", "Los Angeles"]),
              ("广州和深圳今天会下雨吗", ["Guangzhou", "Shenzhen"]), ("首尔和东京哪个更冷", ["Seoul", "Tokyo"]),
              ("What's the time in UTC and in Tokyo?", ["UTC", "Tokyo"]),
              ("Reykjavik and Oslo time", ["Reykjavik", "Oslo"]), ("大理和丽江的天气", ["大理", "丽江"]),
              ("Weather in Boulder and Denver", ["Boulder", "Denver"]),
              ("杭州、苏州、南京的天气怎么样", ["Hangzhou", "Suzhou", "Nanjing"])]:
    tool = t if any(k in q for k in ("time", "几点", "时间")) else w
    add("several_entities", q, "react", [tool(p) for p in ps])
for q, ps in [("比较东京和纽约现在的时间和天气", ["Tokyo", "New York"]), ("北京和伦敦的时间和天气", ["Beijing", "London"]),
              ("time and weather in Paris and Rome", ["Paris", "Rome"])]:
    add("several_entities", q, "react", [c for p in ps for c in (t(p), w(p))])

# -- places outside the built-in table (the geocoder knows them) ---------------------------------
for q, p in [("what time is it in Reykjavik", "Reykjavik"), ("What's the weather in Springfield?", "Springfield"),
             ("weather in Boulder, Colorado", "Boulder, Colorado"), ("大理天气怎么样", "大理"), ("丽江现在几点", "丽江"),
             ("time in Cusco", "Cusco"), ("What's the weather like in Tromsø?", "Tromsø"), ("weather in Hobart", "Hobart"),
             ("what time is it in Chiang Mai?", "Chiang Mai"), ("桂林天气", "桂林"), ("敦煌今天的气温", "敦煌"),
             ("黄山会下雪吗", "黄山"), ("Is it raining in Bergen?", "Bergen"), ("current time in Oslo", "Oslo"),
             ("weather in Porto", "Porto"), ("What's the time in Anchorage?", "Anchorage"),
             ("乌镇天气怎么样", "乌镇"), ("weather in Queenstown", "Queenstown"), ("What time is it in Nuuk?", "Nuuk"),
             ("延吉现在几点", "延吉")]:
    add("unknown_place", q, "tool", [t(p) if any(k in q for k in ("time", "几点")) else w(p)])

# -- places nobody can resolve: an error naming the place, never a default -----------------------
for q, p in [("what time is it in Atlantis", "Atlantis"), ("weather in Narnia", "Narnia"),
             ("What's the weather in Gotham?", "Gotham"), ("time in Wakanda", "Wakanda"),
             ("亚特兰蒂斯现在几点", "亚特兰蒂斯"), ("霍格沃茨天气怎么样", "霍格沃茨"), ("What time is it in Middle-earth?", "Middle-earth"),
             ("weather in Zzyzxqville", "Zzyzxqville"), ("桃花源现在几点", "桃花源"), ("Is it raining in El Dorado?", "El Dorado")]:
    add("unresolvable", q, "tool", [t(p) if any(k in q for k in ("time", "几点")) else w(p)], expect=f"error:{p}")

# -- time-zone forms ------------------------------------------------------------------------------
for q, p in [("what time is it in UTC", "UTC"), ("current UTC time", "UTC"), ("现在UTC时间几点", "UTC"),
             ("GMT time now", "UTC"), ("what time is it in GMT+8", "UTC+08:00"), ("GMT+8 现在几点", "UTC+08:00"),
             ("…in UTC+5:30, what time is it?", "UTC+05:30"), ("time in UTC+5:30", "UTC+05:30"),
             ("what time is it at UTC-3", "UTC-03:00"), ("UTC-05:00 现在几点", "UTC-05:00"), ("time in GMT-7", "UTC-07:00"),
             ("what time is it in Europe/Berlin?", "Europe/Berlin"), ("America/New_York current time", "America/New_York"),
             ("Asia/Kolkata 现在几点", "Asia/Kolkata"), ("time in Australia/Adelaide", "Australia/Adelaide"),
             ("what's the time in America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"),
             ("东八区现在几点", "UTC+08:00"), ("西五区现在几点", "UTC-05:00"), ("UTC+9 what time is it", "UTC+09:00"),
             ("Pacific/Auckland time now", "Pacific/Auckland"), ("现在 GMT 几点", "UTC"), ("time in UTC+0", "UTC"),
             ("what time is it in Etc/UTC", "Etc/UTC"), ("Africa/Nairobi 时间", "Africa/Nairobi"),
             ("what time is it in utc+14", "UTC+14:00")]:
    add("timezone_forms", q, "tool", [t(p)])

# -- knowledge-base questions with a relevant document -------------------------------------------
for q in ["What is the guest wifi password?", "Which VPN client does the office use?", "How many people does the Everest meeting room seat?",
          "Who approves meeting room bookings longer than four hours?", "What is the name of the colour printer?",
          "What are the Kubernetes Service types?", "What does a NodePort service do?", "What is a headless service in Kubernetes?",
          "Explain the ExternalName service type", "Who is the owner of Project Apollo?", "When is milestone 2 of Project Apollo due?",
          "What are the risks of Project Apollo?", "When will the legacy billing service be switched off?",
          "What does the borrow checker enforce in Rust?", "How many mutable references can exist at a time in Rust?",
          "年假有多少天？", "病假工资怎么算？", "休假申请需要提前几天？", "年假可以结转吗？最多几天？", "连续休假超过5天要谁审批？",
          "量子纠错的里程碑是什么？", "Shor 算法有什么威胁？", "量子计算的主要挑战有哪些？", "K8s 的 Service 有哪几种类型", "访客 wifi 密码是多少"]:
    add("kb_relevant", q, "rag")

# -- questions about the knowledge base that it cannot answer --------------------------------------
for q in ["What do my notes say about the coffee machine?", "Search my documents for the parking policy",
          "Is there anything in the knowledge base about travel reimbursement?", "What do my files say about the holiday party?",
          "Check my notes for the dentist appointment", "my documents: what is the gym membership discount?",
          "知识库里有关于报销流程的内容吗？", "我的笔记里有没有提到咖啡机？", "在我的文档里找一下停车规定", "资料里关于团建活动是怎么说的",
          "知识库中有没有出差补贴的标准？", "我的笔记里有健身房的信息吗"]:
    add("kb_none", q, "rag", expect="nothing-relevant")

# -- research and report requests -----------------------------------------------------------------
R = [{"tool": "research_agent", "place": None}, {"tool": "writer_agent", "place": None}, {"tool": "review_agent", "place": None}]
D = [*R, {"tool": "doc_agent", "place": None}]
for q, topic in [("调研一下量子计算的最新进展并写成报告", "量子计算的最新进展"), ("帮我研究一下 Rust 的所有权机制", "Rust 的所有权机制"),
                 ("Research the Rust programming language and write a report", "the Rust programming language"),
                 ("research Kubernetes service types", "Kubernetes service types"),
                 ("写一份关于远程办公利弊的报告", "远程办公利弊"), ("Write a report on electric vehicle adoption in Europe", "electric vehicle adoption in Europe"),
                 ("调研大语言模型在医疗中的应用", "大语言模型在医疗中的应用"), ("investigate the causes of the 2008 financial crisis", "the causes of the 2008 financial crisis"),
                 ("请调研一下固态电池技术，并生成一份报告", "固态电池技术"), ("Draft a report about renewable energy storage", "renewable energy storage"),
                 ("研究一下 WebAssembly 的发展现状", "WebAssembly 的发展现状"), ("research the history of the printing press and summarize it", "the history of the printing press"),
                 ("生成一份关于城市交通拥堵治理的方案", "城市交通拥堵治理"), ("Please research remote work productivity", "remote work productivity")]:
    add("research", q, "react", R, topic=topic)
for q, topic in [("调研量子计算的最新进展并保存到知识库", "量子计算的最新进展"), ("research Kubernetes networking and save it to the knowledge base", "Kubernetes networking"),
                 ("写一份关于碳中和政策的报告并保存", "碳中和政策"), ("Research solid-state batteries, write a report and save it", "solid-state batteries")]:
    add("research", q, "react", D, topic=topic)

# -- more of each, so every category has enough to count -------------------------------------------
for q, p in [("首尔现在几点", "Seoul"), ("新加坡时间", "Singapore"), ("洛杉矶现在几点", "Los Angeles"),
             ("What's the time in Hong Kong?", "Hong Kong"), ("time in Mumbai", "Mumbai"), ("芝加哥现在几点", "Chicago")]:
    add("single_tool", q, "tool", [t(p)])
for q, p in [("weather in Berlin today", "Berlin"), ("南京天气怎么样", "Nanjing"), ("西安下雨了吗", "Xi'an"),
             ("How hot is it in Dubai?", "Dubai"), ("温哥华的天气", "Vancouver"), ("weather in Rome", "Rome")]:
    add("single_tool", q, "tool", [w(p)])
for q, ps in [("北京、东京、伦敦现在各是几点", ["Beijing", "Tokyo", "London"]), ("weather in Madrid and Lisbon", ["Madrid", "Lisbon"]),
              ("What time is it in Hobart and Perth?", ["Hobart", "Perth"]), ("成都和重庆的气温", ["Chengdu", "Chongqing"]),
              ("time in UTC+5:30 and UTC-3", ["UTC+05:30", "UTC-03:00"]), ("台北和香港现在几点", ["Taipei", "Hong Kong"])]:
    tool = t if any(k in q for k in ("time", "几点")) else w
    add("several_entities", q, "react", [tool(p) for p in ps])
for q, p in [("What's the weather in Salzburg?", "Salzburg"), ("time in Kigali", "Kigali"), ("泉州天气", "泉州"),
             ("What time is it in Tbilisi?", "Tbilisi"), ("weather in Uji", "Uji")]:
    add("unknown_place", q, "tool", [t(p) if any(k in q for k in ("time", "几点")) else w(p)])
for q, p in [("weather in Hogsmeade", "Hogsmeade"), ("蓬莱仙岛天气怎么样", "蓬莱仙岛")]:
    add("unresolvable", q, "tool", [w(p)], expect=f"error:{p}")
for q in ["Which printer supports scan-to-email?", "Who is the tech lead of Project Apollo?", "What is a ClusterIP service?",
          "What are lifetimes in Rust?", "结转的年假什么时候前要用完？", "Grover 算法提供什么加速？"]:
    add("kb_relevant", q, "rag")
for q in ["what's 17 times 23?", "How do I say thank you in Japanese?", "What year did World War II end?",
          "中国有多少个省级行政区？", "怎么学好英语？", "太阳系有几颗行星？"]:
    add("general", q, "chat")
for q in ["what's the weather like?", "今天天气怎么样", "会下雨吗？"]:
    add("no_place", q, "tool", [], expect="asks-city")
for q in ["ty", "thx!", "谢了"]:
    add("thanks", q, "chat")
for q in ["good night", "晚安", "I'm back"]:
    add("smalltalk", q, "chat")

# -- time in one place, weather in another (added later, before the planner bound places to clauses):
# each question is about its own clause's places; a clause that names none asks about the others';
# a comma-separated list of places is one question --------------------------------------------------
for q, calls in [("What time is it in New York and what is the weather in Paris?", [t("New York"), w("Paris")]),
                 ("纽约现在几点，巴黎天气怎么样", [t("New York"), w("Paris")]),
                 ("东京几点了？伦敦天气如何？", [t("Tokyo"), w("London")]),
                 ("Tell me the time in Sydney, and how is the weather in Berlin?", [t("Sydney"), w("Berlin")]),
                 ("北京的天气怎么样，再告诉我洛杉矶现在几点", [w("Beijing"), t("Los Angeles")]),
                 ("What's the weather like in Rome and what time is it in Tokyo?", [w("Rome"), t("Tokyo")]),
                 ("Compare the weather in Tokyo, Osaka and Kyoto", [w("Tokyo"), w("Osaka"), w("Kyoto")]),
                 ("上海现在几点，那里天气怎么样", [t("Shanghai"), w("Shanghai")]),
                 ("What time is it in Madrid? And the weather there?", [t("Madrid"), w("Madrid")]),
                 ("伦敦、巴黎现在几点，纽约天气如何", [t("London"), t("Paris"), w("New York")]),
                 ("weather in Seoul, time in Dubai", [w("Seoul"), t("Dubai")]),
                 ("北京，上海，广州的天气", [w("Beijing"), w("Shanghai"), w("Guangzhou")])]:
    add("split_clauses", q, "react", calls)

out = Path(__file__).with_name("routing.jsonl")
out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
print(len(rows), "rows →", out)
