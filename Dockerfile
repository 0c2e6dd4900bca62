# Build a static hoox binary, then ship it alone on a minimal base as a
# non-root user.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/hoox ./cmd/hoox

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hoox /usr/local/bin/hoox
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hoox"]
CMD ["serve"]
