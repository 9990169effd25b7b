"""Moved to ``saber.cities`` (shared by the tools, the planner and memory); kept for old imports."""

from saber.cities import CITIES as CITIES
from saber.cities import SCAN_LIMIT as SCAN_LIMIT
from saber.cities import City as City
from saber.cities import city_mentions as city_mentions
from saber.cities import city_names as city_names
from saber.cities import find_city as find_city
from saber.cities import lookup_city as lookup_city
