"""Common cities by their Chinese and English names: canonical name, IANA timezone, coordinates.

These are static facts, used to answer "what time is it in 东京" without a network, to skip a
geocoding round trip for the weather, and by the agent to pull a city out of a query.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True, kw_only=True, slots=True)
class City:
    name: str
    """Canonical English name ("New York")."""
    country: str
    timezone: str
    """IANA zone ("America/New_York")."""
    latitude: float
    longitude: float
    names_zh: tuple[str, ...] = ()
    """Chinese names, the usual one first."""
    aliases: tuple[str, ...] = ()
    """Other English (or romanised) spellings."""

    @property
    def name_zh(self) -> str | None:
        return self.names_zh[0] if self.names_zh else None

    @property
    def all_names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases, *self.names_zh)


def _c(name: str, country: str, tz: str, lat: float, lon: float, zh: str, *aliases: str) -> City:
    """Compact row: ``zh`` holds the Chinese names separated by ``|``."""
    return City(name=name, country=country, timezone=tz, latitude=lat, longitude=lon,
                names_zh=tuple(zh.split("|")) if zh else (), aliases=aliases)


_SH = "Asia/Shanghai"

CITIES: tuple[City, ...] = (
    # mainland China (one official zone), Hong Kong, Macau, Taiwan
    _c("Beijing", "China", _SH, 39.9042, 116.4074, "北京|北京市", "Peking"),
    _c("Shanghai", "China", _SH, 31.2304, 121.4737, "上海|上海市"),
    _c("Guangzhou", "China", _SH, 23.1291, 113.2644, "广州|广州市", "Canton"),
    _c("Shenzhen", "China", _SH, 22.5431, 114.0579, "深圳|深圳市"),
    _c("Hangzhou", "China", _SH, 30.2741, 120.1551, "杭州|杭州市"),
    _c("Chengdu", "China", _SH, 30.5728, 104.0668, "成都|成都市"),
    _c("Chongqing", "China", _SH, 29.5630, 106.5516, "重庆|重庆市"),
    _c("Wuhan", "China", _SH, 30.5928, 114.3055, "武汉|武汉市"),
    _c("Xi'an", "China", _SH, 34.3416, 108.9398, "西安|西安市", "Xian"),
    _c("Nanjing", "China", _SH, 32.0603, 118.7969, "南京|南京市", "Nanking"),
    _c("Tianjin", "China", _SH, 39.3434, 117.3616, "天津|天津市"),
    _c("Suzhou", "China", _SH, 31.2989, 120.5853, "苏州|苏州市"),
    _c("Xiamen", "China", _SH, 24.4798, 118.0894, "厦门|厦门市", "Amoy"),
    _c("Qingdao", "China", _SH, 36.0671, 120.3826, "青岛|青岛市", "Tsingtao"),
    _c("Changsha", "China", _SH, 28.2282, 112.9388, "长沙|长沙市"),
    _c("Zhengzhou", "China", _SH, 34.7466, 113.6254, "郑州|郑州市"),
    _c("Shenyang", "China", _SH, 41.8057, 123.4315, "沈阳|沈阳市"),
    _c("Dalian", "China", _SH, 38.9140, 121.6147, "大连|大连市"),
    _c("Harbin", "China", _SH, 45.8038, 126.5349, "哈尔滨|哈尔滨市"),
    _c("Changchun", "China", _SH, 43.8171, 125.3235, "长春|长春市"),
    _c("Kunming", "China", _SH, 25.0389, 102.7183, "昆明|昆明市"),
    _c("Hefei", "China", _SH, 31.8206, 117.2272, "合肥|合肥市"),
    _c("Jinan", "China", _SH, 36.6512, 117.1201, "济南|济南市"),
    _c("Fuzhou", "China", _SH, 26.0745, 119.2965, "福州|福州市"),
    _c("Nanning", "China", _SH, 22.8170, 108.3665, "南宁|南宁市"),
    _c("Guiyang", "China", _SH, 26.6470, 106.6302, "贵阳|贵阳市"),
    _c("Nanchang", "China", _SH, 28.6829, 115.8582, "南昌|南昌市"),
    _c("Ningbo", "China", _SH, 29.8683, 121.5440, "宁波|宁波市"),
    _c("Dongguan", "China", _SH, 23.0207, 113.7518, "东莞|东莞市"),
    _c("Foshan", "China", _SH, 23.0215, 113.1214, "佛山|佛山市"),
    _c("Shijiazhuang", "China", _SH, 38.0428, 114.5149, "石家庄|石家庄市"),
    _c("Taiyuan", "China", _SH, 37.8706, 112.5489, "太原|太原市"),
    _c("Lanzhou", "China", _SH, 36.0611, 103.8343, "兰州|兰州市"),
    _c("Hohhot", "China", _SH, 40.8424, 111.7490, "呼和浩特|呼和浩特市"),
    _c("Urumqi", "China", _SH, 43.8256, 87.6168, "乌鲁木齐|乌鲁木齐市", "Ürümqi"),
    _c("Lhasa", "China", _SH, 29.6520, 91.1721, "拉萨|拉萨市"),
    _c("Sanya", "China", _SH, 18.2528, 109.5119, "三亚|三亚市"),
    _c("Haikou", "China", _SH, 20.0440, 110.1999, "海口|海口市"),
    _c("Hong Kong", "China", "Asia/Hong_Kong", 22.3193, 114.1694, "香港", "HongKong"),
    _c("Macau", "China", "Asia/Macau", 22.1987, 113.5439, "澳门", "Macao"),
    _c("Taipei", "Taiwan", "Asia/Taipei", 25.0330, 121.5654, "台北|台北市|臺北"),
    _c("Kaohsiung", "Taiwan", "Asia/Taipei", 22.6273, 120.3014, "高雄|高雄市"),
    # rest of Asia
    _c("Tokyo", "Japan", "Asia/Tokyo", 35.6762, 139.6503, "东京|東京"),
    _c("Osaka", "Japan", "Asia/Tokyo", 34.6937, 135.5023, "大阪"),
    _c("Kyoto", "Japan", "Asia/Tokyo", 35.0116, 135.7681, "京都"),
    _c("Seoul", "South Korea", "Asia/Seoul", 37.5665, 126.9780, "首尔|汉城"),
    _c("Busan", "South Korea", "Asia/Seoul", 35.1796, 129.0756, "釜山", "Pusan"),
    _c("Singapore", "Singapore", "Asia/Singapore", 1.3521, 103.8198, "新加坡"),
    _c("Bangkok", "Thailand", "Asia/Bangkok", 13.7563, 100.5018, "曼谷"),
    _c("Kuala Lumpur", "Malaysia", "Asia/Kuala_Lumpur", 3.1390, 101.6869, "吉隆坡"),
    _c("Jakarta", "Indonesia", "Asia/Jakarta", -6.2088, 106.8456, "雅加达"),
    _c("Manila", "Philippines", "Asia/Manila", 14.5995, 120.9842, "马尼拉"),
    _c("Hanoi", "Vietnam", "Asia/Ho_Chi_Minh", 21.0278, 105.8342, "河内"),
    _c("Ho Chi Minh City", "Vietnam", "Asia/Ho_Chi_Minh", 10.8231, 106.6297, "胡志明市|胡志明|西贡", "Saigon"),
    _c("New Delhi", "India", "Asia/Kolkata", 28.6139, 77.2090, "新德里|德里", "Delhi"),
    _c("Mumbai", "India", "Asia/Kolkata", 19.0760, 72.8777, "孟买", "Bombay"),
    _c("Bengaluru", "India", "Asia/Kolkata", 12.9716, 77.5946, "班加罗尔", "Bangalore"),
    _c("Karachi", "Pakistan", "Asia/Karachi", 24.8607, 67.0011, "卡拉奇"),
    _c("Dhaka", "Bangladesh", "Asia/Dhaka", 23.8103, 90.4125, "达卡"),
    _c("Kathmandu", "Nepal", "Asia/Kathmandu", 27.7172, 85.3240, "加德满都"),
    _c("Ulaanbaatar", "Mongolia", "Asia/Ulaanbaatar", 47.8864, 106.9057, "乌兰巴托", "Ulan Bator"),
    _c("Dubai", "United Arab Emirates", "Asia/Dubai", 25.2048, 55.2708, "迪拜"),
    _c("Riyadh", "Saudi Arabia", "Asia/Riyadh", 24.7136, 46.6753, "利雅得"),
    _c("Tehran", "Iran", "Asia/Tehran", 35.6892, 51.3890, "德黑兰"),
    _c("Tel Aviv", "Israel", "Asia/Jerusalem", 32.0853, 34.7818, "特拉维夫"),
    _c("Istanbul", "Turkey", "Europe/Istanbul", 41.0082, 28.9784, "伊斯坦布尔"),
    _c("Vladivostok", "Russia", "Asia/Vladivostok", 43.1198, 131.8869, "符拉迪沃斯托克|海参崴"),
    # Europe
    _c("London", "United Kingdom", "Europe/London", 51.5074, -0.1278, "伦敦"),
    _c("Manchester", "United Kingdom", "Europe/London", 53.4808, -2.2426, "曼彻斯特"),
    _c("Dublin", "Ireland", "Europe/Dublin", 53.3498, -6.2603, "都柏林"),
    _c("Paris", "France", "Europe/Paris", 48.8566, 2.3522, "巴黎"),
    _c("Berlin", "Germany", "Europe/Berlin", 52.5200, 13.4050, "柏林"),
    _c("Munich", "Germany", "Europe/Berlin", 48.1351, 11.5820, "慕尼黑", "München"),
    _c("Frankfurt", "Germany", "Europe/Berlin", 50.1109, 8.6821, "法兰克福"),
    _c("Amsterdam", "Netherlands", "Europe/Amsterdam", 52.3676, 4.9041, "阿姆斯特丹"),
    _c("Brussels", "Belgium", "Europe/Brussels", 50.8503, 4.3517, "布鲁塞尔"),
    _c("Zurich", "Switzerland", "Europe/Zurich", 47.3769, 8.5417, "苏黎世", "Zürich"),
    _c("Geneva", "Switzerland", "Europe/Zurich", 46.2044, 6.1432, "日内瓦"),
    _c("Vienna", "Austria", "Europe/Vienna", 48.2082, 16.3738, "维也纳", "Wien"),
    _c("Madrid", "Spain", "Europe/Madrid", 40.4168, -3.7038, "马德里"),
    _c("Barcelona", "Spain", "Europe/Madrid", 41.3874, 2.1686, "巴塞罗那"),
    _c("Lisbon", "Portugal", "Europe/Lisbon", 38.7223, -9.1393, "里斯本", "Lisboa"),
    _c("Rome", "Italy", "Europe/Rome", 41.9028, 12.4964, "罗马", "Roma"),
    _c("Milan", "Italy", "Europe/Rome", 45.4642, 9.1900, "米兰", "Milano"),
    _c("Athens", "Greece", "Europe/Athens", 37.9838, 23.7275, "雅典"),
    _c("Prague", "Czechia", "Europe/Prague", 50.0755, 14.4378, "布拉格"),
    _c("Warsaw", "Poland", "Europe/Warsaw", 52.2297, 21.0122, "华沙"),
    _c("Stockholm", "Sweden", "Europe/Stockholm", 59.3293, 18.0686, "斯德哥尔摩"),
    _c("Moscow", "Russia", "Europe/Moscow", 55.7558, 37.6173, "莫斯科"),
    _c("Saint Petersburg", "Russia", "Europe/Moscow", 59.9311, 30.3609, "圣彼得堡", "St Petersburg", "St. Petersburg"),
    _c("Kyiv", "Ukraine", "Europe/Kyiv", 50.4501, 30.5234, "基辅", "Kiev"),
    # Africa
    _c("Cairo", "Egypt", "Africa/Cairo", 30.0444, 31.2357, "开罗"),
    _c("Johannesburg", "South Africa", "Africa/Johannesburg", -26.2041, 28.0473, "约翰内斯堡"),
    _c("Nairobi", "Kenya", "Africa/Nairobi", -1.2921, 36.8219, "内罗毕"),
    _c("Lagos", "Nigeria", "Africa/Lagos", 6.5244, 3.3792, "拉各斯"),
    # the Americas
    _c("New York", "United States", "America/New_York", 40.7128, -74.0060, "纽约", "New York City", "NYC"),
    _c("Los Angeles", "United States", "America/Los_Angeles", 34.0522, -118.2437, "洛杉矶"),
    _c("San Francisco", "United States", "America/Los_Angeles", 37.7749, -122.4194, "旧金山|三藩市"),
    _c("Seattle", "United States", "America/Los_Angeles", 47.6062, -122.3321, "西雅图"),
    _c("Las Vegas", "United States", "America/Los_Angeles", 36.1699, -115.1398, "拉斯维加斯"),
    _c("Chicago", "United States", "America/Chicago", 41.8781, -87.6298, "芝加哥"),
    _c("Houston", "United States", "America/Chicago", 29.7604, -95.3698, "休斯顿"),
    _c("Dallas", "United States", "America/Chicago", 32.7767, -96.7970, "达拉斯"),
    _c("Boston", "United States", "America/New_York", 42.3601, -71.0589, "波士顿"),
    _c("Washington, D.C.", "United States", "America/New_York", 38.9072, -77.0369, "华盛顿",
       "Washington DC", "Washington D.C."),
    _c("Miami", "United States", "America/New_York", 25.7617, -80.1918, "迈阿密"),
    _c("Atlanta", "United States", "America/New_York", 33.7490, -84.3880, "亚特兰大"),
    _c("Denver", "United States", "America/Denver", 39.7392, -104.9903, "丹佛"),
    _c("Phoenix", "United States", "America/Phoenix", 33.4484, -112.0740, "凤凰城"),
    _c("Honolulu", "United States", "Pacific/Honolulu", 21.3069, -157.8583, "檀香山|火奴鲁鲁"),
    _c("Toronto", "Canada", "America/Toronto", 43.6532, -79.3832, "多伦多"),
    _c("Vancouver", "Canada", "America/Vancouver", 49.2827, -123.1207, "温哥华"),
    _c("Montreal", "Canada", "America/Toronto", 45.5017, -73.5673, "蒙特利尔", "Montréal"),
    _c("Mexico City", "Mexico", "America/Mexico_City", 19.4326, -99.1332, "墨西哥城"),
    _c("São Paulo", "Brazil", "America/Sao_Paulo", -23.5505, -46.6333, "圣保罗", "Sao Paulo"),
    _c("Rio de Janeiro", "Brazil", "America/Sao_Paulo", -22.9068, -43.1729, "里约热内卢|里约", "Rio"),
    _c("Buenos Aires", "Argentina", "America/Argentina/Buenos_Aires", -34.6037, -58.3816, "布宜诺斯艾利斯"),
    _c("Lima", "Peru", "America/Lima", -12.0464, -77.0428, "利马"),
    _c("Santiago", "Chile", "America/Santiago", -33.4489, -70.6693, "圣地亚哥"),
    # Oceania
    _c("Sydney", "Australia", "Australia/Sydney", -33.8688, 151.2093, "悉尼"),
    _c("Melbourne", "Australia", "Australia/Melbourne", -37.8136, 144.9631, "墨尔本"),
    _c("Brisbane", "Australia", "Australia/Brisbane", -27.4698, 153.0251, "布里斯班"),
    _c("Perth", "Australia", "Australia/Perth", -31.9505, 115.8605, "珀斯"),
    _c("Auckland", "New Zealand", "Pacific/Auckland", -36.8485, 174.7633, "奥克兰"),
)


def _fold(text: str) -> str:
    """Lower-case, accents and full-width forms folded, curly apostrophes made straight."""
    decomposed = unicodedata.normalize("NFKD", text.replace("\u2019", "'"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _is_latin(name: str) -> bool:
    return all(ord(ch) < 0x3000 for ch in name)


# Words that contain a city's name but do not mean the city ("罗马尼亚" is Romania, "江西安徽"
# is two provinces, "完成都" is "finished, all"). Matched like names, then skipped.
_NOT_CITIES = (
    "罗马尼亚", "巴黎世家", "华盛顿州", "江西", "陕西", "山西",
    "完成", "变成", "形成", "组成", "构成", "造成", "达成", "建成", "分成", "换成", "改成", "写成",
)


SCAN_LIMIT = 8192
"""Characters of free text searched for place names. A place a request is about is named in its
first sentences; scanning a pasted megabyte for city names would only find accidents (and cost
time on the event loop)."""


@dataclass(frozen=True, slots=True)
class _Index:
    by_name: dict[str, City]
    skip: frozenset[str]
    lengths: dict[str, tuple[int, ...]]
    """First character of a name → the lengths of the names starting with it, longest first."""


@cache
def _index() -> _Index:
    by_name: dict[str, City] = {}
    for city in CITIES:
        for name in city.all_names:
            key = _fold(name)
            if key in by_name and by_name[key] is not city:
                raise ValueError(f"city name {name!r} is used by {by_name[key].name} and {city.name}")
            by_name[key] = city
    lengths: dict[str, set[int]] = {}
    for key in {*by_name, *_NOT_CITIES}:
        lengths.setdefault(key[0], set()).add(len(key))
    return _Index(by_name=by_name, skip=frozenset(_NOT_CITIES),
                  lengths={ch: tuple(sorted(ls, reverse=True)) for ch, ls in lengths.items()})


def _word_char(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def city_mentions(text: str, *, limit: int = 16) -> list[tuple[int, int, City]]:
    """Every known city named in ``text`` as (start, end, city), in order, at most ``limit``.

    Linear: one pass over the first ``SCAN_LIMIT`` characters, trying at each position only the
    name lengths that start with its character. At one position the longest name wins; Latin
    names stand as whole words ("Rio" is not in "Rioja"), Chinese names need no boundaries; words
    that contain a city's name without meaning it ("罗马尼亚", "完成") are consumed and skipped.
    Offsets are into the folded text, which has the same length as ``text`` for the scripts the
    table uses.
    """
    index = _index()
    folded = _fold(text[:SCAN_LIMIT])
    out: list[tuple[int, int, City]] = []
    i, n = 0, len(folded)
    while i < n and len(out) < limit:
        ch = folded[i]
        hit = 0
        if ch in index.lengths and not (_word_char(ch) and i > 0 and _word_char(folded[i - 1])):
            for length in index.lengths[ch]:
                key = folded[i:i + length]
                if len(key) != length or (key not in index.by_name and key not in index.skip):
                    continue
                if _is_latin(key) and i + length < n and _word_char(folded[i + length]):
                    continue
                hit = length
                if key in index.by_name and key not in index.skip:
                    out.append((i, i + length, index.by_name[key]))
                break
        i += hit or 1
    return out


_SUFFIXES = ("市", " city")


def lookup_city(name: str) -> City | None:
    """The city whose name (or alias) is exactly ``name``, ignoring case, accents and a trailing
    "市" / "city"; None when it is not in the table."""
    by_name = _index().by_name
    folded = _fold(name).strip()
    if folded in by_name:  # before trimming: "Washington, D.C." ends with a dot
        return by_name[folded]
    key = folded.strip(" .,;:!?。，；：！？")
    if key in by_name:
        return by_name[key]
    for suffix in _SUFFIXES:
        if key.endswith(suffix) and key[: -len(suffix)].strip() in by_name:
            return by_name[key[: -len(suffix)].strip()]
    return None


def find_city(text: str) -> City | None:
    """The first known city mentioned in free text ("北京天气怎么样", "time in new york?").

    Leftmost mention wins; at one position the longest name wins. English names match whole
    words only, case-insensitively. Linear in the text and bounded (see ``city_mentions``).
    """
    found = city_mentions(text, limit=1) if text else []
    return found[0][2] if found else None


def city_names() -> list[str]:
    """Every name the table recognises (English, aliases, Chinese), longest first."""
    return sorted({name for city in CITIES for name in city.all_names}, key=lambda n: (-len(n), n))
