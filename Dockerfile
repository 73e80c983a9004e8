# One image for every agentloop process; docker-compose.yml picks the command.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY agentloop ./agentloop
COPY reasoner_svc ./reasoner_svc
COPY tool_svc ./tool_svc
COPY gateway ./gateway
RUN pip install --no-cache-dir -c constraints.txt .
ENV AGENTLOOP_HOST=0.0.0.0
ENTRYPOINT ["agentloop"]
