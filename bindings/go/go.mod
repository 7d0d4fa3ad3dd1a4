module libattn.dev/attn

go 1.19
