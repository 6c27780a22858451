# The application image: the worker, the approvals UI, the CLI and the demo model, one per command.
FROM python:3.12-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# bubblewrap confines approved shell commands (see the README); util-linux unshare is the fallback.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml ./
COPY settings.py connection.py control.py worker.py starter.py visible.py approvals_tools.py ./
COPY workflows/ workflows/
COPY activities/ activities/
COPY projection/ projection/
COPY payload_store/ payload_store/
COPY demo_model/ demo_model/
COPY ui/ ui/
COPY cli/ cli/
COPY examples/ examples/
RUN pip install .

# The projection, the ledger and the tools' workspace live on a volume, owned by an unprivileged user.
RUN useradd --create-home --uid 10001 app && mkdir -p /data/workspace && chown -R app /data
USER app
ENV APPROVALS_DB=/data/approvals.db \
    WORKSPACE_DIR=/data/workspace
VOLUME ["/data"]

CMD ["python", "worker.py"]
