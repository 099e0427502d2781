module github.com/ambitkernel/ambit/verifier

go 1.26.0

require (
	github.com/ambitkernel/ambit/proto v0.0.0
	github.com/ambitkernel/ambit/sdk v0.0.0
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	golang.org/x/sync v0.24.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
	modernc.org/sqlite v1.62.0
)

replace (
	github.com/ambitkernel/ambit/proto => ../proto
	github.com/ambitkernel/ambit/sdk => ../sdk
)
