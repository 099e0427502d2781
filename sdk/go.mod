module github.com/ambitkernel/ambit/sdk

go 1.26.0

require github.com/ambitkernel/ambit/proto v0.0.0

replace github.com/ambitkernel/ambit/proto => ../proto
