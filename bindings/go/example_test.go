package attn_test

import (
	"errors"
	"fmt"

	"libattn.dev/attn"
)

// The README's example: a FLASH_ATTN build of two requests (a decode with 4 tokens of context,
// a fresh prefill of 2), block size 16, block table width 2. It loads $ATTN_LIBRARY.
func Example() {
	lib, err := attn.Open("") // $ATTN_LIBRARY, else libattn.so.1
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := attn.NewKVCacheSpec(16, 8, 128)           // block size, KV heads, head size
	cfg := attn.NewBuilderConfig(256, 8192, 1024, 32) // max seqs, max tokens, max len, Q heads
	b, err := lib.NewBuilder("FLASH_ATTN", spec, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	batch, err := attn.NewCommonMetadata([]int32{0, 1, 3}, []int32{5, 2}, []int32{1, 0, 2, 0}, 2, []int64{20, 32, 33})
	if err != nil {
		fmt.Println(err)
		return
	}
	md, err := b.Build(0, batch, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	seq, _ := md.Int32s("seq_lens")
	tokens, _ := md.Int("num_actual_tokens")
	fmt.Println(md.Kind(), seq, tokens)

	batch.SeqLens = attn.Slice([]int32{5, 1}) // shorter than its query of 2
	_, err = b.Build(0, batch, false)
	fmt.Println(errors.Is(err, attn.ErrInvalidArgument), err)
	// Output:
	// FLASH_ATTN [5 2] 3
	// true [invalid argument] common->seq_lens[1]=1 is less than its query length 2
}
