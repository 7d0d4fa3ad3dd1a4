module libattn.dev/examples/attn-demo

go 1.19

require libattn.dev/attn v0.0.0

replace libattn.dev/attn => ../../bindings/go
