package attn_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"libattn.dev/attn"
)

// Threads: two goroutines on one builder get busy errors or succeed, and what they read is
// never corrupt; distinct builders build in parallel; queries run during builds.

func TestTwoGoroutinesOnOneBuilderGetBusyOrSucceed(t *testing.T) {
	b := newBuilder(t, "FLASH_ATTN", 90)
	samples := []*sample{demoSample(), newSample([]int32{3, 4, 5, 6}, []int32{1, 1, 1, 9}, width)}
	var built, busy, stale int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(s *sample) {
			defer wg.Done()
			c, err := attn.NewCommonMetadata(s.queryStartLoc, s.seqLens, s.blockTable, s.width, s.slotMapping)
			if err != nil {
				errs <- err
				return
			}
			for i := 0; i < 400; i++ {
				md, err := b.Build(0, c, false)
				var e *attn.Error
				switch {
				case err == nil:
					atomic.AddInt64(&built, 1)
				case errors.As(err, &e) && e.Code == attn.ErrBusy:
					atomic.AddInt64(&busy, 1)
					continue
				default:
					errs <- err
					return
				}
				// reading races the other goroutine's builds: the values are this batch's, or
				// the read says the metadata is stale; never another batch's numbers
				seq, err := md.Int32s("seq_lens")
				if err != nil {
					if errors.As(err, &e) && e.Code == attn.ErrInvalidArgument {
						atomic.AddInt64(&stale, 1)
						continue
					}
					errs <- err
					return
				}
				if len(seq) != len(s.seqLens) {
					errs <- errors.New("seq_lens of another batch")
					return
				}
				for k := range seq {
					if seq[k] != s.seqLens[k] {
						errs <- errors.New("corrupt seq_lens")
						return
					}
				}
			}
		}(samples[g])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if built == 0 {
		t.Fatal("no build succeeded")
	}
	t.Logf("%d builds, %d busy, %d stale reads", built, busy, stale)
	// the builder is intact
	s := demoSample()
	md := get(b.Build(0, s.common(t), false))(t)
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), s.seqLens)
}

func TestABuildWhileAnotherGoroutineReadsIsBusy(t *testing.T) {
	b := newBuilder(t, "FLASH_ATTN", 90)
	s := demoSample()
	c := s.common(t)
	md := get(b.Build(0, c, false))(t)
	// a reader in progress: hold its lock the way a long read would
	view := get(md.Tensor("seq_lens"))(t)
	started, done := make(chan struct{}), make(chan struct{})
	var readErr error
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			if i == 10 {
				close(started)
			}
			if _, err := view.Int32s(); err != nil {
				readErr = err
				return
			}
		}
	}()
	<-started
	sawBusy := false
	for i := 0; i < 2000 && !sawBusy; i++ {
		if _, err := b.Build(0, c, false); err != nil {
			wantError(t, err, attn.ErrBusy, "in use by another goroutine")
			sawBusy = true
		} else {
			break // the build won: the reader now sees stale metadata, which is fine
		}
	}
	<-done
	if readErr != nil {
		wantError(t, readErr, attn.ErrInvalidArgument, "stale")
	}
}

func TestDistinctBuildersBuildInParallel(t *testing.T) {
	l := library(t)
	backends := fullAttentionBackends(t, l)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			backend := backends[g%len(backends)]
			b, err := l.NewBuilder(backend, spec(), config(90))
			if err != nil {
				errs <- err
				return
			}
			defer b.Close()
			s := newSample([]int32{int32(g), 10, 20}, []int32{1, 1, int32(g + 1)}, width)
			c, _ := attn.NewCommonMetadata(s.queryStartLoc, s.seqLens, s.blockTable, s.width, s.slotMapping)
			for i := 0; i < 100; i++ {
				md, err := b.Build(0, c, false)
				if err != nil {
					errs <- err
					return
				}
				if _, err := b.CudagraphSupport(); err != nil { // a query between builds
					errs <- err
					return
				}
				if _, err := md.Fields(); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestQueriesAndCloseDuringBuilds(t *testing.T) {
	b := get(library(t).NewBuilder("FLASH_ATTN", spec(), config(90)))(t)
	c := demoSample().common(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() { // builds until the builder is closed
		defer wg.Done()
		for {
			if _, err := b.Build(0, c, false); err != nil {
				var e *attn.Error
				if errors.As(err, &e) && e.Code == attn.ErrInvalidArgument {
					return // closed
				}
			}
		}
	}()
	go func() { // queries, never busy
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := b.ReorderBatchThreshold(); err != nil {
				wantError(t, err, attn.ErrInvalidArgument, "closed")
				return
			}
		}
	}()
	for i := 0; i < 1000; i++ {
		if _, err := b.CudagraphSupport(); err != nil {
			t.Fatal(err)
		}
	}
	ok(t, b.Close())
	close(stop)
	wg.Wait()
}

// Two builders updating from each other's metadata at once: busy or success, never a deadlock
// (each update holds its builder and reads the other's metadata; it only tries the other's
// lock). A stress test: the window for the deadlock is narrow.
func TestCrossedUpdatesDoNotDeadlock(t *testing.T) {
	x := newBuilder(t, "FLASH_ATTN", 90)
	y := newBuilder(t, "FLASH_ATTN", 90)
	s := demoSample()
	c := s.common(t)
	table := get(attn.Matrix(s.blockTable, width))(t)
	slots := attn.Slice(s.slotMapping)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, pair := range [][2]*attn.Builder{{x, y}, {y, x}} {
		wg.Add(1)
		go func(self, other *attn.Builder) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				md, err := self.Build(0, c, false)
				if err == nil {
					_, err = other.UpdateBlockTable(md, table, slots)
				}
				var e *attn.Error
				if err != nil && !(errors.As(err, &e) && (e.Code == attn.ErrBusy || e.Code == attn.ErrInvalidArgument)) {
					errs <- err
					return
				}
			}
		}(pair[0], pair[1])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
