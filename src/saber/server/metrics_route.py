"""``GET /metrics``: the process's Prometheus metrics (open like ``/api/health``: no user data)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from saber.cluster.serving import metrics_response, refresh_queue_gauge

router = APIRouter(tags=["status"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format."}})
async def metrics(request: Request) -> Response:
    await refresh_queue_gauge(getattr(request.app.state, "runs", None))
    body, content_type = metrics_response()
    return Response(body, media_type=content_type)
