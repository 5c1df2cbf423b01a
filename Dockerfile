# The image of retrystorm's Python services: target, Locust master and workers, chaos API.
#
#   docker compose build                       # FROM python:3.12-slim, from a registry
#   docker build --build-arg PYTHON_IMAGE=retrystorm-base:bookworm --network host -t retrystorm:local .
#                                              # FROM a base made locally (scripts/offline-images)
#
# PYTHON_IMAGE must provide python3 with venv. The source stays in /app (the locustfile is
# read from there) and is installed into /opt/venv in editable mode.
ARG PYTHON_IMAGE=python:3.12-slim
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# pip trusts the image's system CA bundle (an offline base carries the host's, which may
# include a proxy's CA), not only its own.
RUN python3 -m venv /opt/venv \
    && if [ -f /etc/ssl/certs/ca-certificates.crt ]; then \
         printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > /opt/venv/pip.conf; fi

WORKDIR /app

# Dependencies first, from pyproject.toml alone, so code changes rebuild in seconds. The live
# extra (Locust and the target's HTTP server) for the load generator and the target, the
# docker extra (the Docker SDK) for the chaos service's docker backend; Grafana annotations
# need no extra.
# The version is read from retrystorm/__init__.py (pyproject.toml: dynamic), so the stand-in package has one.
COPY pyproject.toml README.md LICENSE ./
RUN mkdir retrystorm && echo '__version__ = "0"' > retrystorm/__init__.py \
    && pip install '.[live,docker]' \
    && pip uninstall -y retrystorm \
    && rm -rf build retrystorm.egg-info

COPY . .
RUN pip install --no-deps -e . && retrystorm --version

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin retrystorm
USER retrystorm
EXPOSE 8070 8071 8089 5557
CMD ["retrystorm", "--help"]
