"""The API's routers, one per concept."""
