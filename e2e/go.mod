module github.com/ambitkernel/ambit/e2e

go 1.26.0

require (
	github.com/ambitkernel/ambit/proto v0.0.0
	github.com/ambitkernel/ambit/sdk v0.0.0
)

replace (
	github.com/ambitkernel/ambit/proto => ../proto
	github.com/ambitkernel/ambit/sdk => ../sdk
)
