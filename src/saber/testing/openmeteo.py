"""A loopback imitation of Open-Meteo (geocoding and current-weather forecast) for tests and benches.

The geocoder answers like the real one: ``GET /v1/search?name=…`` returns ``{"results": [...]}``
with name, coordinates, country, admin1 and timezone for a case-insensitive exact name match, and
no ``results`` key when nothing matches. The forecast returns fixed current conditions. Nothing
here reaches the internet.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True, kw_only=True, slots=True)
class GeoPlace:
    name: str
    latitude: float
    longitude: float
    timezone: str
    country: str
    admin1: str | None = None
    names: tuple[str, ...] = ()
    """Other names it is found by (a Chinese name, say)."""


GAZETTEER: tuple[GeoPlace, ...] = (
    GeoPlace(name="Reykjavík", latitude=64.1355, longitude=-21.8954, timezone="Atlantic/Reykjavik", country="Iceland",
             names=("Reykjavik", "雷克雅未克")),
    GeoPlace(name="Springfield", latitude=39.8017, longitude=-89.6437, timezone="America/Chicago", country="United States",
             admin1="Illinois"),
    GeoPlace(name="Boulder", latitude=40.0150, longitude=-105.2705, timezone="America/Denver", country="United States",
             admin1="Colorado"),
    GeoPlace(name="大理", latitude=25.6065, longitude=100.2676, timezone="Asia/Shanghai", country="中国", admin1="云南", names=("Dali",)),
    GeoPlace(name="丽江", latitude=26.8721, longitude=100.2299, timezone="Asia/Shanghai", country="中国", admin1="云南", names=("Lijiang",)),
    GeoPlace(name="Cusco", latitude=-13.5226, longitude=-71.9673, timezone="America/Lima", country="Peru"),
    GeoPlace(name="Tromsø", latitude=69.6496, longitude=18.9560, timezone="Europe/Oslo", country="Norway", names=("Tromso",)),
    GeoPlace(name="Hobart", latitude=-42.8794, longitude=147.3294, timezone="Australia/Hobart", country="Australia", admin1="Tasmania"),
    GeoPlace(name="Chiang Mai", latitude=18.7904, longitude=98.9847, timezone="Asia/Bangkok", country="Thailand"),
    GeoPlace(name="桂林", latitude=25.2819, longitude=110.2864, timezone="Asia/Shanghai", country="中国", admin1="广西", names=("Guilin",)),
    GeoPlace(name="敦煌", latitude=40.1421, longitude=94.6620, timezone="Asia/Shanghai", country="中国", admin1="甘肃", names=("Dunhuang",)),
    GeoPlace(name="黄山", latitude=29.7147, longitude=118.3375, timezone="Asia/Shanghai", country="中国", admin1="安徽", names=("Huangshan",)),
    GeoPlace(name="Bergen", latitude=60.3929, longitude=5.3241, timezone="Europe/Oslo", country="Norway"),
    GeoPlace(name="Oslo", latitude=59.9127, longitude=10.7461, timezone="Europe/Oslo", country="Norway", names=("奥斯陆",)),
    GeoPlace(name="Porto", latitude=41.1496, longitude=-8.6110, timezone="Europe/Lisbon", country="Portugal"),
    GeoPlace(name="Anchorage", latitude=61.2181, longitude=-149.9003, timezone="America/Anchorage", country="United States",
             admin1="Alaska"),
    GeoPlace(name="乌镇", latitude=30.7453, longitude=120.4870, timezone="Asia/Shanghai", country="中国", admin1="浙江", names=("Wuzhen",)),
    GeoPlace(name="Queenstown", latitude=-45.0312, longitude=168.6626, timezone="Pacific/Auckland", country="New Zealand"),
    GeoPlace(name="Nuuk", latitude=64.1835, longitude=-51.7216, timezone="America/Nuuk", country="Greenland"),
    GeoPlace(name="延吉", latitude=42.9069, longitude=129.5078, timezone="Asia/Shanghai", country="中国", admin1="吉林", names=("Yanji",)),
    GeoPlace(name="Salzburg", latitude=47.7994, longitude=13.0440, timezone="Europe/Vienna", country="Austria"),
    GeoPlace(name="Kigali", latitude=-1.9499, longitude=30.0588, timezone="Africa/Kigali", country="Rwanda"),
    GeoPlace(name="泉州", latitude=24.9139, longitude=118.5858, timezone="Asia/Shanghai", country="中国", admin1="福建", names=("Quanzhou",)),
    GeoPlace(name="Tbilisi", latitude=41.6941, longitude=44.8337, timezone="Asia/Tbilisi", country="Georgia"),
    GeoPlace(name="Uji", latitude=34.8844, longitude=135.7997, timezone="Asia/Tokyo", country="Japan", admin1="Kyoto"),
)
"""Places outside Saber's built-in table, as the real geocoder would return them."""


@dataclass
class FakeOpenMeteo:
    base_url: str
    places: tuple[GeoPlace, ...]
    queries: list[str] = field(default_factory=list)
    """Every ``name`` the geocoder was asked for, in order."""
    down: bool = False
    """When true every request gets a 503."""

    @property
    def geocoding_url(self) -> str:
        return f"{self.base_url}/v1/search"

    @property
    def forecast_url(self) -> str:
        return f"{self.base_url}/v1/forecast"

    def geocode(self, name: str) -> list[dict[str, Any]]:
        key = name.strip().casefold()
        return [
            {"name": p.name, "latitude": p.latitude, "longitude": p.longitude, "timezone": p.timezone,
             "country": p.country, **({"admin1": p.admin1} if p.admin1 else {})}
            for p in self.places if key in {n.casefold() for n in (p.name, *p.names)}
        ]


def _forecast(query: Mapping[str, str]) -> dict[str, Any]:
    return {
        "timezone": "GMT",
        "current_units": {"temperature_2m": "°C", "relative_humidity_2m": "%", "apparent_temperature": "°C",
                          "wind_speed_10m": "km/h"},
        "current": {"time": "2026-12-01T12:00", "temperature_2m": 12.5, "relative_humidity_2m": 60,
                    "apparent_temperature": 11.0, "weather_code": 2, "wind_speed_10m": 9.0},
    }


def _handler(service: FakeOpenMeteo) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            status, body = 404, {"error": True, "reason": f"no route {parts.path}"}
            if service.down:
                status, body = 503, {"error": True, "reason": "service unavailable"}
            elif parts.path == "/v1/search":
                service.queries.append(query.get("name", ""))
                results = service.geocode(query.get("name", ""))
                status, body = 200, ({"results": results} if results else {"generationtime_ms": 0.1})
            elif parts.path == "/v1/forecast":
                status, body = 200, _forecast(query)
            payload = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def fake_open_meteo(places: tuple[GeoPlace, ...] = GAZETTEER) -> Iterator[FakeOpenMeteo]:
    """Serve the fake on an ephemeral loopback port for the duration of the ``with`` block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    service = FakeOpenMeteo(base_url=f"http://127.0.0.1:{server.server_address[1]}", places=places)
    server.RequestHandlerClass = _handler(service)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-open-meteo",
                              daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
