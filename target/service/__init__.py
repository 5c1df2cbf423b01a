"""The target service: the overload models behind a real asynchronous HTTP server.

``create_app(config, registry=..., clock=...)`` builds one service; ``await
app.start()`` listens and starts the model's clock task; ``await app.stop()`` stops
accepting, answers what is in flight and closes every connection. ``retrystorm
target`` (``target/cli.py``) runs one from the command line.
"""

from retrystorm.target.service.app import TargetApp, create_app
from retrystorm.target.service.config import ServiceConfig, check_servable, default_backlog
from retrystorm.target.service.limits import ConnectionLimits

__all__ = ["ConnectionLimits", "ServiceConfig", "TargetApp", "check_servable", "create_app", "default_backlog"]
