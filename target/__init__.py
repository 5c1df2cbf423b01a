"""Server side: overload models (pure), the HTTP service and its metrics."""
