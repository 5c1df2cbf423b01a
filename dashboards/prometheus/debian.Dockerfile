# Prometheus from Debian's package, on a local base: for hosts that cannot pull
# prom/prometheus (scripts/offline-images builds it as retrystorm-prometheus:local).
#
#   docker build --build-arg BASE_IMAGE=retrystorm-base:bookworm --network host \
#       -f dashboards/prometheus/debian.Dockerfile -t retrystorm-prometheus:local dashboards/prometheus
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /prometheus && chown prometheus:prometheus /prometheus

USER prometheus
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
