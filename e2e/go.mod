module github.com/ambitkernel/ambit/e2e

go 1.26.0

require (
	github.com/ambitkernel/ambit/adapters v0.0.0
	github.com/ambitkernel/ambit/kernel v0.0.0
	github.com/ambitkernel/ambit/proto v0.0.0
	github.com/ambitkernel/ambit/sdk v0.0.0
	github.com/transparency-dev/merkle v0.0.2
	go.uber.org/goleak v1.3.0
	golang.org/x/mod v0.42.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
	modernc.org/sqlite v1.62.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.4 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	github.com/transparency-dev/formats v0.1.1 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace (
	github.com/ambitkernel/ambit/adapters => ../adapters
	github.com/ambitkernel/ambit/kernel => ../kernel
	github.com/ambitkernel/ambit/proto => ../proto
	github.com/ambitkernel/ambit/sdk => ../sdk
	github.com/ambitkernel/ambit/verifier => ../verifier
)
