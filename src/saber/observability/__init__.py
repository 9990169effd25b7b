"""What every layer may report to: OpenTelemetry traces (``tracing``) and Prometheus metrics
(``metrics``). Both are cheap no-ops until switched on, and import nothing of Saber's but its
settings."""
