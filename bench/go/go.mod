// bench/go/go.mod - the Go peer of the Jiffy microbenchmarks (bench/README.md); standard library only.
module jiffy-bench

go 1.19
