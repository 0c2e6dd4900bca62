# Build a static hoox binary, then ship it alone on an empty base as a
# non-root user.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/hoox ./cmd/hoox

FROM scratch
# CA certificates for TLS to a managed Postgres.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/hoox /usr/local/bin/hoox
# An unprivileged numeric user: the image has no /etc/passwd to name one.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hoox"]
CMD ["serve"]
