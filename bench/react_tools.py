"""The tools of ``bench/against_react.py``: local, deterministic, with the latency of a real backend.

Both systems get these same functions: Saber as ``Tool``s, LangGraph as LangChain tools that
validate with the same ``Tool.validate`` and call the same function. Each call is recorded (tool,
validated arguments, whether it succeeded) in ``CALLS`` when it starts, so a call a race cancels
still counts as made. Values outside the tables raise ``ToolError`` naming the bad argument, as a
real backend answers an unknown city or symbol. Latencies are seconds, scaled by ``SCALE``.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import operator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from saber.tools import Tool, ToolError, tool

LATENCY = {
    "get_weather": 0.4, "get_time": 0.05, "search_web": 0.6, "search_news": 0.35, "fetch_page": 0.4,
    "lookup_capital": 0.15, "get_timezone": 0.05, "get_ticker": 0.15, "get_stock_price": 0.25,
    "flight_destination": 0.2, "rate_ecb": 0.2, "rate_fed": 0.45, "convert_currency": 0.1, "calculator": 0.01,
    "translate": 0.3, "compare": 0.15, "summarize": 0.3,
}
NOW = datetime(2026, 3, 2, 6, 30, tzinfo=UTC)
"""The clock every ``get_time`` reads: results must not change from one run to the next."""


@dataclass
class Recorder:
    """The calls one run made: ``(tool, canonical JSON of its validated arguments, ok)``."""

    calls: list[tuple[str, str, bool]] = field(default_factory=list)
    scale: float = 1.0


CALLS = Recorder()


def key(args: dict[str, Any]) -> str:
    """The canonical text of a call's arguments, by which calls are compared."""
    return json.dumps(args, ensure_ascii=False, sort_keys=True)


async def _timed(name: str, args: dict[str, Any], compute: Any) -> str:
    """Record the call, wait the backend's latency, then compute (a failure is recorded as such)."""
    index = len(CALLS.calls)
    CALLS.calls.append((name, key(args), True))
    await asyncio.sleep(LATENCY[name] * CALLS.scale)
    try:
        return str(compute())
    except ToolError:
        CALLS.calls[index] = (name, key(args), False)
        raise


WEATHER = {
    "london": "rain, 9°C", "伦敦": "rain, 9°C", "paris": "cloudy, 12°C", "berlin": "sunny, 7°C",
    "北京": "sunny, 5°C", "beijing": "sunny, 5°C", "上海": "cloudy, 11°C", "shanghai": "cloudy, 11°C",
    "广州": "rain, 19°C", "rome": "mild, 15°C", "成都": "cloudy, 10°C", "深圳": "sunny, 21°C", "杭州": "cloudy, 12°C",
    "南京": "overcast, 9°C", "武汉": "rain, 10°C", "西安": "sunny, 6°C", "重庆": "fog, 12°C", "canberra": "sunny, 24°C",
    "渥太华": "snow, -6°C", "ottawa": "snow, -6°C", "new york": "clear, 3°C", "东京": "sunny, 13°C", "首尔": "cloudy, 6°C",
    "madrid": "sunny, 17°C", "vancouver": "rain, 8°C", "barcelona": "sunny, 16°C",
}
CAPITALS = {"australia": "Canberra", "japan": "Tokyo", "canada": "Ottawa", "加拿大": "渥太华", "巴西": "巴西利亚",
            "brazil": "Brasilia"}
ZONES = {"tokyo": "Asia/Tokyo", "巴西利亚": "America/Sao_Paulo", "brasilia": "America/Sao_Paulo", "ottawa": "America/Toronto"}
TICKERS = {"apple": "AAPL", "英伟达": "NVDA", "nvidia": "NVDA", "microsoft": "MSFT", "tesla": "TSLA", "特斯拉": "TSLA"}
PRICES = {"AAPL": "231.40", "MSFT": "418.25", "TSLA": "262.80", "NVDA": "128.60"}
FLIGHTS = {"CA981": "New York"}
PER_USD = {"USD": 1.0, "EUR": 0.92, "JPY": 149.5, "GBP": 0.79, "CNY": 7.18}
LANGUAGES = {"french": "fr", "english": "en", "spanish": "es", "chinese": "zh"}


def _lookup(table: dict[str, str], value: str, field_name: str) -> str:
    found = table.get(value.strip().casefold())
    if found is None:
        raise ToolError(f"{field_name}: unknown value {value!r}", retryable=False)
    return found


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


@tool
async def get_weather(city: str) -> str:
    """Current weather of a city."""
    return await _timed("get_weather", {"city": city}, lambda: f"{city}: {_lookup(WEATHER, city, 'city')}")


@tool
async def get_time(timezone: str) -> str:
    """Current local time in an IANA timezone such as Europe/London."""

    def compute() -> str:
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(f"timezone: unknown IANA zone {timezone!r}", retryable=False) from None
        return f"{NOW.astimezone(zone):%Y-%m-%d %H:%M} ({timezone})"

    return await _timed("get_time", {"timezone": timezone}, compute)


@tool
async def search_web(query: str) -> str:
    """Search the web; returns the top result."""
    return await _timed("search_web", {"query": query}, lambda: f"web result {_digest(query)} about {query}")


@tool
async def search_news(query: str) -> str:
    """Search news sites; returns the top story."""
    return await _timed("search_news", {"query": query}, lambda: f"news story {_digest(query)} about {query}")


@tool
async def fetch_page(url: str) -> str:
    """Fetch a web page and return its text."""

    def compute() -> str:
        if not url.startswith("https://example.org/"):
            raise ToolError(f"url: cannot fetch {url!r}", retryable=False)
        return f"text of {url} ({_digest(url)})"

    return await _timed("fetch_page", {"url": url}, compute)


@tool
async def lookup_capital(country: str) -> str:
    """The capital city of a country."""
    return await _timed("lookup_capital", {"country": country}, lambda: _lookup(CAPITALS, country, "country"))


@tool
async def get_timezone(city: str) -> str:
    """The IANA timezone of a city."""
    return await _timed("get_timezone", {"city": city}, lambda: _lookup(ZONES, city, "city"))


@tool
async def get_ticker(company: str) -> str:
    """The stock ticker symbol of a listed company."""
    return await _timed("get_ticker", {"company": company}, lambda: _lookup(TICKERS, company, "company"))


@tool
async def get_stock_price(symbol: str) -> str:
    """The last share price of a ticker symbol, in US dollars."""

    def compute() -> str:
        if symbol not in PRICES:
            raise ToolError(f"symbol: unknown ticker {symbol!r}", retryable=False)
        return PRICES[symbol]

    return await _timed("get_stock_price", {"symbol": symbol}, compute)


@tool
async def flight_destination(flight_number: str) -> str:
    """The city a flight lands in."""
    return await _timed("flight_destination", {"flight_number": flight_number},
                        lambda: FLIGHTS.get(flight_number) or _lookup({}, flight_number, "flight_number"))


def _rate(base: str, quote: str) -> str:
    for name, code in (("base", base), ("quote", quote)):
        if code not in PER_USD:
            raise ToolError(f"{name}: unknown currency {code!r}", retryable=False)
    return f"{PER_USD[quote] / PER_USD[base]:.4f}"


@tool
async def rate_ecb(base: str, quote: str) -> str:
    """Exchange rate (units of quote per unit of base) from the ECB reference feed."""
    return await _timed("rate_ecb", {"base": base, "quote": quote}, lambda: _rate(base, quote))


@tool
async def rate_fed(base: str, quote: str) -> str:
    """Exchange rate (units of quote per unit of base) from the Federal Reserve feed."""
    return await _timed("rate_fed", {"base": base, "quote": quote}, lambda: _rate(base, quote))


@tool
async def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert an amount of money between currencies (ISO codes such as USD, EUR, CNY)."""
    args = {"amount": amount, "from_currency": from_currency, "to_currency": to_currency}
    return await _timed("convert_currency", args,
                        lambda: f"{amount * float(_rate(from_currency, to_currency)):.2f} {to_currency}")


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _arith(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return float(_OPS[type(node.op)](_arith(node.left), _arith(node.right)))
    raise ToolError("expression: only numbers and + - * / are allowed", retryable=False)


@tool
async def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression with + - * /."""

    def compute() -> str:
        try:
            tree = ast.parse(expression, mode="eval")
        except SyntaxError:
            raise ToolError(f"expression: not arithmetic: {expression!r}", retryable=False) from None
        return f"{_arith(tree.body):g}"

    return await _timed("calculator", {"expression": expression}, compute)


@tool
async def translate(text: str, target_language: str) -> str:
    """Translate text into a language (French, English, Spanish, Chinese)."""
    return await _timed("translate", {"text": text, "target_language": target_language},
                        lambda: f"[{_lookup(LANGUAGES, target_language, 'target_language')}] {text}")


@tool
async def compare(a: str, b: str) -> str:
    """Put two findings side by side and say how they differ."""
    return await _timed("compare", {"a": a, "b": b}, lambda: f"comparison {_digest(a + b)}: {a} | {b}")


@tool
async def summarize(text: str) -> str:
    """Summarise a text in a few sentences."""
    return await _timed("summarize", {"text": text}, lambda: f"summary {_digest(text)} of {len(text)} characters")


TOOLS: list[Tool] = [get_weather, get_time, search_web, search_news, fetch_page, lookup_capital, get_timezone, get_ticker,
                     get_stock_price, flight_destination, rate_ecb, rate_fed, convert_currency, calculator, translate,
                     compare, summarize]
BY_NAME = {t.name: t for t in TOOLS}
