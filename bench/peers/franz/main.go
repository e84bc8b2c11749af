// bench-franz-members: consume N records through franz-go's share consumer (kgo with
// ShareGroup) with M members in one process and print the same line as sharesink-bench and
// bench-krafka-members (clock from the first record; CPU from getrusage of the process, also
// from the first record).
//
//	bench-franz-members --bootstrap HOST:PORT --topic T --group G --records N
//	                    [--members M] [--max-poll-records R] [--fetch-max-bytes B] [--implicit]
//
// The group must already have share.auto.offset.reset=earliest (bench/run.py sets it).
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

type args struct {
	bootstrap, topic, group string
	records                 uint64
	members                 int
	maxPoll                 int
	fetchMaxBytes           int32 // 0: franz-go's default
	explicit                bool
}

func parse() args {
	a := args{members: 1, maxPoll: 500, explicit: true}
	argv := os.Args[1:]
	for i := 0; i < len(argv); i++ {
		flag := argv[i]
		val := func() string {
			if i+1 >= len(argv) {
				fmt.Fprintf(os.Stderr, "%s needs a value\n", flag)
				os.Exit(2)
			}
			i++
			return argv[i]
		}
		num := func(bits int) int64 {
			v, err := strconv.ParseInt(val(), 10, bits)
			if err != nil || v <= 0 {
				fmt.Fprintf(os.Stderr, "%s: not a positive number\n", flag)
				os.Exit(2)
			}
			return v
		}
		switch flag {
		case "--bootstrap":
			a.bootstrap = val()
		case "--topic":
			a.topic = val()
		case "--group":
			a.group = val()
		case "--records":
			a.records = uint64(num(64))
		case "--members":
			a.members = int(num(32))
		case "--max-poll-records":
			a.maxPoll = int(num(32))
		case "--fetch-max-bytes":
			a.fetchMaxBytes = int32(num(32))
		case "--implicit":
			a.explicit = false
		default:
			fmt.Fprintf(os.Stderr, "unknown argument %s\n", flag)
			os.Exit(2)
		}
	}
	if a.bootstrap == "" || a.topic == "" || a.group == "" || a.records == 0 {
		fmt.Fprintln(os.Stderr, "--bootstrap, --topic, --group and --records are required")
		os.Exit(2)
	}
	return a
}

type firstRecord struct {
	once sync.Once
	at   time.Time
	cpu  float64
}

// member counts what the broker said about this member's acknowledgements (per partition and
// request, not per record: that is what ShareAckCallback reports).
type member struct {
	cl        *kgo.Client
	ackOK     atomic.Uint64
	ackErrors atomic.Uint64
	firstErr  atomic.Pointer[string]
	accepted  atomic.Uint64 // records we marked AckAccept
	done      chan struct{}
}

func main() {
	a := parse()
	var total, bytes atomic.Uint64
	var first firstRecord
	started := time.Now()
	// Canceled when the run ends, to wake members parked in PollRecords.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	members := make([]*member, a.members)
	for i := range members {
		m := &member{done: make(chan struct{})}
		opts := []kgo.Opt{
			kgo.SeedBrokers(a.bootstrap),
			kgo.ClientID(fmt.Sprintf("franz-bench-%d", i)),
			kgo.ShareGroup(a.group),
			kgo.ConsumeTopics(a.topic),
			// MaxRecords and BatchSize of each ShareFetch, as the other clients send.
			kgo.ShareMaxRecords(int32(a.maxPoll)),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				for _, r := range rs {
					if r.Err == nil {
						m.ackOK.Add(1)
						continue
					}
					m.ackErrors.Add(1)
					s := fmt.Sprintf("%s/%d: %v", r.Topic, r.Partition, r.Err)
					m.firstErr.CompareAndSwap(nil, &s)
				}
			}),
			kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
		}
		if a.fetchMaxBytes > 0 {
			opts = append(opts, kgo.FetchMaxBytes(a.fetchMaxBytes))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			fmt.Fprintf(os.Stderr, "member %d: %v\n", i, err)
			os.Exit(1)
		}
		m.cl = cl
		members[i] = m
		go consume(ctx, i, m, &a, &total, &bytes, &first)
	}

	last, lastAt := uint64(0), time.Now()
	report := time.Now()
	for total.Load() < a.records {
		time.Sleep(100 * time.Millisecond)
		n := total.Load()
		if n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > 30*time.Second {
			fmt.Fprintf(os.Stderr, "no progress for 30 s at %d records; stopping\n", n)
			break
		}
		if time.Since(report) > 5*time.Second {
			fmt.Fprintf(os.Stderr, "... %d records\n", n)
			report = time.Now()
		}
		if allDone(members) {
			break
		}
	}
	end, cpuEnd := time.Now(), cpuSeconds()
	stop()
	for i, m := range members {
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			fmt.Fprintf(os.Stderr, "member %d did not finish\n", i)
		}
		lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.cl.LeaveGroupContext(lctx); err != nil {
			fmt.Fprintf(os.Stderr, "member %d: leaving the group: %v\n", i, err)
		}
		cancel()
		m.cl.Close()
	}

	n, b := total.Load(), bytes.Load()
	first.once.Do(func() {}) // orders first's fields before the reads below (or leaves them unset)
	if first.at.IsZero() {
		fmt.Fprintln(os.Stderr, "no records consumed")
		os.Exit(1)
	}
	secs := max(end.Sub(first.at).Seconds(), 1e-9)
	cpu := cpuEnd - first.cpu
	fmt.Printf("consumed %d records (%.1f MB) with %d member(s) in %.2f s (+%.2f s join): "+
		"%.0f records/s, %.2f MB/s, CPU %.2f s (%.2f CPU s per million records)\n",
		n, float64(b)/1e6, a.members, secs, first.at.Sub(started).Seconds(),
		float64(n)/secs, float64(b)/1e6/secs, cpu, cpu/(float64(n)/1e6))
	for i, m := range members {
		line := fmt.Sprintf("member %d: accepted %d records; broker ack results ok %d, errors %d",
			i, m.accepted.Load(), m.ackOK.Load(), m.ackErrors.Load())
		if e := m.firstErr.Load(); e != nil {
			line += " (first: " + *e + ")"
		}
		fmt.Println(line)
	}
}

func allDone(ms []*member) bool {
	for _, m := range ms {
		select {
		case <-m.done:
		default:
			return false
		}
	}
	return true
}

func consume(ctx context.Context, id int, m *member, a *args, total, bytes *atomic.Uint64,
	first *firstRecord) {
	defer close(m.done)
	for total.Load() < a.records {
		fs := m.cl.PollRecords(ctx, a.maxPoll)
		if ctx.Err() != nil || fs.IsClientClosed() {
			break
		}
		fs.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(os.Stderr, "member %d: fetch %s/%d: %v\n", id, t, p, err)
		})
		if fs.NumRecords() == 0 {
			continue
		}
		first.once.Do(func() { first.at, first.cpu = time.Now(), cpuSeconds() })
		var nb, nr uint64
		fs.EachRecord(func(r *kgo.Record) {
			nb += uint64(len(r.Key) + len(r.Value))
			nr++
			if a.explicit {
				r.Ack(kgo.AckAccept)
			}
		})
		if a.explicit {
			m.accepted.Add(nr)
		}
		bytes.Add(nb)
		total.Add(nr)
	}
	if !a.explicit {
		// franz-go accepts a poll's unacknowledged records at the next poll, but leaving the
		// group releases them; accept the last poll's here so that implicit mode, too, consumes
		// every record it counted.
		m.cl.MarkAcks(kgo.AckAccept)
	}
	// Acks go out in the background; send the last ones before the member leaves.
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.cl.FlushAcks(fctx); err != nil {
		fmt.Fprintf(os.Stderr, "member %d: flushing acks: %v\n", id, err)
	}
}
