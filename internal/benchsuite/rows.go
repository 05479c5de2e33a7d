package main

import "fmt"

// atLeast and atMost make a row's value from one metric.
func atLeast(key, format string, goal float64) func(metrics) (string, bool) {
	return func(m metrics) (string, bool) {
		v, ok := m.get(key)
		if !ok {
			return "not reported (" + key + ")", false
		}
		return fmt.Sprintf(format, v), v >= goal
	}
}

func atMost(key, format string, goal float64) func(metrics) (string, bool) {
	return func(m metrics) (string, bool) {
		v, ok := m.get(key)
		if !ok {
			return "not reported (" + key + ")", false
		}
		return fmt.Sprintf(format, v), v <= goal
	}
}

// with adds other metrics to a row's value, for context.
func with(f func(metrics) (string, bool), format string, keys ...string) func(metrics) (string, bool) {
	return scaled(f, 1, format, keys...)
}

// withMicros is with for metrics in nanoseconds, shown in µs.
func withMicros(f func(metrics) (string, bool), format string, keys ...string) func(metrics) (string, bool) {
	return scaled(f, 1e3, format, keys...)
}

// scaled adds the metrics of keys, each divided by div, to a row's value.
func scaled(f func(metrics) (string, bool), div float64, format string, keys ...string) func(metrics) (string, bool) {
	return func(m metrics) (string, bool) {
		s, ok := f(m)
		vals := make([]any, len(keys))
		for i, k := range keys {
			vals[i] = m[k] / div
		}
		return s + " (" + fmt.Sprintf(format, vals...) + ")", ok
	}
}

// all meets its goal when every part does.
func all(parts ...func(metrics) (string, bool)) func(metrics) (string, bool) {
	return func(m metrics) (string, bool) {
		out, met := "", true
		for i, p := range parts {
			s, ok := p(m)
			if i > 0 {
				out += "; "
			}
			out += s
			met = met && ok
		}
		return out, met
	}
}

var rows = []row{
	{
		name: "invoke-long", figure: "POST /invoke, echo model, memory store, 16 long sessions", anchor: "a bare net/http handler decoding the same JSON",
		today: "0.086x (611 µs CPU per request)", goal: "≥ 0.5x",
		pkg: "./server/", bench: "^BenchmarkInvokeVsBare$/^long$", benchtime: "1x",
		value: with(atLeast("long/spool/bare", "%.2fx", 0.5), "%.0f vs %.0f req/s; %.0f vs %.0f µs CPU per request",
			"long/spool-req/s", "long/bare-req/s", "long/spool-cpu-µs/req", "long/bare-cpu-µs/req"),
	},
	{
		name: "invoke-new", figure: "same, a new session per request", anchor: "the bare handler",
		today: "0.38x", goal: "≥ 0.7x",
		pkg: "./server/", bench: "^BenchmarkInvokeVsBare$/^new$", benchtime: "1x",
		value: with(atLeast("new/spool/bare", "%.2fx", 0.7), "%.0f vs %.0f req/s; %.0f vs %.0f µs CPU per request",
			"new/spool-req/s", "new/bare-req/s", "new/spool-cpu-µs/req", "new/bare-cpu-µs/req"),
	},
	{
		name: "file-turn", figure: "one turn on the file store", anchor: "3 raw write+fdatasync (its floor)",
		today: "1.8-2.1x", goal: "≤ 1.2x",
		pkg: ".", bench: "^BenchmarkTurnVsRaw$", benchtime: "40x",
		value: withMicros(atMost("/turn/raw", "%.2fx", 1.2), "%.0f vs %.0f µs a turn", "/turn-ns", "/raw3-ns"),
	},
	{
		name: "sqlite-mastra", figure: "one turn (a user and an assistant message) on SQLite", anchor: "Mastra's LibSQLStore (one transaction, synchronous=NORMAL, no fsync), side by side",
		today: "0.27x Mastra's rate", goal: "≥ 0.8x, keeping spool's durability",
		pkg: "./store/sqlitestore/", bench: "^BenchmarkTurnVsMastra$", benchtime: "1x",
		value: with(atLeast("/spool/mastra", "%.2fx", 0.8), "%.0f vs %.0f turns/s, %.0f vs %.0f µs CPU a turn, and %.0f more to index spool's after the round; one write+fdatasync a turn alone, the floor of a durable turn: over a written file (as SQLite's log is) %.0f turns/s, %.2fx Mastra's; appended %.0f turns/s, %.2fx",
			"/spool-turns/s", "/mastra-turns/s", "/spool-cpu-µs/turn", "/mastra-cpu-µs/turn", "/spool-index-cpu-µs/turn",
			"/overwrite-floor-turns/s", "/overwrite-floor/mastra", "/append-floor-turns/s", "/append-floor/mastra"),
	},
	{
		name: "file-append", figure: "one file-store append", anchor: "raw write+fdatasync",
		today: "1.21x wall, 2.2x CPU (130 vs 60 µs)", goal: "≤ 1.1x wall, ≤ 1.3x CPU",
		pkg: "./store/filestore/", bench: "^BenchmarkAppendVsRaw$", benchtime: "60x",
		value: withMicros(all(atMost("/append/raw", "%.2fx wall", 1.1), atMost("/cpu-append/raw", "%.2fx CPU", 1.3)),
			"%.0f vs %.0f µs CPU an append", "/append-cpu-ns/op", "/raw-cpu-ns/op"),
	},
	{
		name: "file-writers", figure: "8 writers on 8 sessions", anchor: "8 raw write+fdatasync loops",
		today: "0.50x", goal: "≥ 0.9x",
		pkg: "./store/filestore/", bench: "^BenchmarkWritersVsRaw$", benchtime: "1x",
		value: with(atLeast("/writers/raw", "%.2fx", 0.9), "%.0f vs %.0f appends/s", "/appends/s", "/raw/s"),
	},
	{
		name: "history", figure: "history build, 1,000 entries, default window", anchor: "",
		today: "1.37 µs/entry", goal: "≤ 0.5 µs/entry",
		pkg: "./history/", bench: "^BenchmarkBuild$/^entries=1000", benchtime: "2000x",
		value: with(atMost("entries=1000/cap=200/ns/entry", "%.0f ns/entry", 500), "%.0f ns CPU", "entries=1000/cap=200/cpu-ns/entry"),
	},
	{
		name: "list-cold", figure: "list first 50 of 10,000 short sessions, cold (new Store)", anchor: "the naive read-everything list",
		today: "9-30x", goal: "≥ 100x",
		pkg: "./store/filestore/", bench: "^BenchmarkListColdVsNaive$", benchtime: "1x",
		value: with(atLeast("/naive/cold", "%.0fx", 100), "%.1f vs %.0f ms", "/cold-ms", "/naive-ms"),
	},
	{
		name: "sessions-ls", figure: "`spool sessions ls --limit 50 --json`, warm", anchor: "the naive list as a process",
		today: "7.5x (10,011 fstatat calls)", goal: "≥ 50x",
		pkg: "./cmd/spool/", bench: "^BenchmarkSessionsLsVsNaive$", benchtime: "1x",
		value: with(atLeast("/naive/ls", "%.0fx", 50), "%.1f vs %.0f ms", "/ls-ms", "/naive-ms"),
	},
	{
		name: "full-read", figure: "full read of a 10,000-entry session", anchor: "",
		today: "file 49 ms, sqlite 113, postgres 86, redis 60", goal: "≤ 25 ms every store",
		pkg: "./internal/teststores/", bench: "^BenchmarkFullRead$", benchtime: "1x",
		value: all(atMost("file/read-ms", "file %.1f ms", 25), atMost("sqlite/read-ms", "sqlite %.1f", 25),
			atMost("postgres/read-ms", "postgres %.1f", 25), atMost("redis/read-ms", "redis %.1f", 25)),
	},
	{
		name: "pg-tail", figure: "postgres newest 50 of a 100,000-entry session on tables never analyzed", anchor: "",
		today: "74-109 ms (full scan)", goal: "≤ 1 ms, whatever the statistics",
		pkg: "./store/pgstore/", bench: "^BenchmarkTailUnanalyzed$", benchtime: "1x",
		value: atMost("/tail-ms", "%.2f ms", 1),
	},
	{
		name: "sqlite-crash", figure: "sqlite: a session whose process was killed mid-turn is usable again after", anchor: "",
		today: "118 s (and a false 409)", goal: "≤ 2 s",
		pkg: ".", bench: "^BenchmarkSQLiteKilledMidTurn$", benchtime: "1x",
		value: atMost("/usable-after-s", "%.3f s", 2),
	},
	{
		name: "sqlite-open", figure: "sqlite: three processes opening a new database file at once", anchor: "",
		today: "1 in 300 fails with SQLITE_BUSY", goal: "0",
		pkg: "./store/sqlitestore/", bench: "^BenchmarkNewDatabaseByProcesses$", benchtime: "1x",
		value: with(atMost("/failed-opens", "%.0f failed", 0), "of %.0f opens", "/opens"),
	},
	{
		name: "import", figure: "`spool sessions import` / `spool migrate` throughput", anchor: "",
		today: "postgres 1,772 entries/s; file about 460/s; file to sqlite 118 s, to postgres 236 s", goal: "≥ 20,000 entries/s into every store",
		pkg: "./store/transfer/", bench: "^BenchmarkImport$", benchtime: "1x",
		value: all(with(atLeast("file/entries/s", "file %.0f entries/s", 20000), "the disk's floor %.0f: 3,000 files created, written and synced 8 at a time", "file/floor-entries/s"), atLeast("sqlite/entries/s", "sqlite %.0f", 20000),
			atLeast("postgres/entries/s", "postgres %.0f", 20000), atLeast("redis/entries/s", "redis %.0f", 20000)),
	},
	{
		name: "replicas", figure: "a turn on one and on two replicas of one Postgres (item 8: what scales)", anchor: "one replica",
		today: "1.15x in wall rate, which two shared cores cannot show", goal: "replica CPU per turn flat (two within 25% of one); round trips per turn a small constant (≤ 8)",
		pkg: "./internal/replicatest/", bench: "^BenchmarkReplicaCost$", benchtime: "1x",
		value: func(m metrics) (string, bool) {
			c1, c2 := m["/one-replica-cpu-µs/turn"], m["/two-replica-cpu-µs/turn"]
			t1, t2 := m["/one-db-round-trips/turn"], m["/two-db-round-trips/turn"]
			s := fmt.Sprintf("one: %.0f µs replica CPU, %.0f µs database CPU, %.1f round trips, %.0f bytes a turn; two: %.0f, %.0f, %.1f, %.0f",
				c1, m["/one-db-cpu-µs/turn"], t1, m["/one-db-bytes/turn"], c2, m["/two-db-cpu-µs/turn"], t2, m["/two-db-bytes/turn"])
			return s, c1 > 0 && c2 <= 1.25*c1 && t1 <= 8 && t2 <= 8
		},
	},
}
