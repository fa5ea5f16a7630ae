# The Gin Rummy service image: gunicorn serving service.wsgi:app on port 8000 as a non-root
# user. Build from the repository root:  docker build -t ginrummy-service:1.2.0 .
# Both stages use the same base image, so the virtualenv built in the first runs in the second.

# --- builder: a virtualenv with the pinned dependencies and the service's wheel ----------
FROM python:3.11.14-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

WORKDIR /src

# Dependencies first, from the lock file alone: this layer stays cached while only the
# service's code changes.
COPY requirements.lock ./
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir -r requirements.lock

# The service as a wheel, installed without resolving anything: `pip check` then fails the
# build if pyproject.toml asks for a dependency the lock file does not pin.
COPY pyproject.toml README.md ./
# service/api/docs/*.md link to docs/: the wheel takes the text they point to.
COPY docs/rules.md docs/api.md docs/fairness.md docs/ratings.md docs/records.md ./docs/
COPY service ./service
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
 && /opt/venv/bin/pip install --no-cache-dir --no-deps /wheels/ginrummy_service-*.whl \
 && /opt/venv/bin/pip check

# --- runtime: the virtualenv only; no compilers, no sources, no pip cache ----------------
FROM python:3.11.14-slim-bookworm

LABEL org.opencontainers.image.title="ginrummy-service" \
      org.opencontainers.image.description="REST service hosting Gin Rummy matches, state in Redis" \
      org.opencontainers.image.licenses="MIT"

# PYTHONUNBUFFERED: log lines reach `kubectl logs` as they are written.
# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only at run time; the wheels'
# bytecode was compiled at install time.
ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PORT=8000

# A fixed numeric uid, so that Kubernetes' runAsNonRoot can verify it without a passwd lookup.
RUN groupadd --system --gid 10001 ginrummy \
 && useradd --system --uid 10001 --gid ginrummy --no-create-home \
            --home-dir /nonexistent --shell /usr/sbin/nologin ginrummy

COPY --from=builder /opt/venv /opt/venv

WORKDIR /app
USER 10001:10001
EXPOSE 8000

# slim has no curl; Python's urllib raises (exit 1) on anything but a 2xx answer.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=4)"]

# Gunicorn is PID 1 (exec form, no shell in between) and takes SIGTERM as "finish the
# requests in flight, then exit" (graceful_timeout in service/gunicorn_conf.py).
STOPSIGNAL SIGTERM
CMD ["gunicorn", "-c", "python:service.gunicorn_conf", "service.wsgi:app"]
