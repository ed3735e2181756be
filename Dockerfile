# Build stage: the same steps as the README (npm ci, npm run build).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace package's manifest first, so npm ci links it into node_modules.
COPY packages/nest-delay/package.json ./packages/nest-delay/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY packages ./packages
COPY scripts ./scripts
COPY src ./src
COPY migrations ./migrations
RUN npm run build && npm prune --omit=dev

# Runtime stage: only the compiled app and its production dependencies.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production PORT=3000
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/packages/nest-delay/package.json ./packages/nest-delay/
COPY --from=build /app/packages/nest-delay/dist ./packages/nest-delay/dist
USER node
EXPOSE 3000
# Healthy = ready to serve: database reachable, migrations applied, delay runtime holding its lease.
# start-period covers migrations at start; the probe is plain node (the slim image has no curl).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "dist/src/ops/health/probe.js", "/health/ready"]
CMD ["node", "dist/src/main.js"]
