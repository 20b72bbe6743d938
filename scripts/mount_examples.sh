#!/usr/bin/env bash
# Unmodified programs on emulated flash through `deltaflash mount` (docs/mount.md), the
# numbers behind docs/mount.md's "Measured: three programs on the mount":
#   (a) fio random 4 KiB writes on the raw disk file, per storage, against ftl-bench's
#       write amplification for the same pattern on the same geometry;
#   (b) SQLite (Python's sqlite3 module) on ext4, WAL and DELETE journal, the NoLgn
#       paper's overwrite workload, against `bench --engine sqlite` through the VFS;
#   (c) PostgreSQL pgbench on ext4: flash programs per transaction with
#       full_page_writes on and off.
# Needs root, /dev/fuse and the release binary (make build); installs fio with apt if it
# is missing. Writes out/mount-examples/*.json and prints the tables.
# Usage: scripts/mount_examples.sh [a|b|c ...]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/deltaflash}
OUT=out/mount-examples
mkdir -p "$OUT"
PARTS=("$@")
[[ ${#PARTS[@]} -gt 0 ]] || PARTS=(a b c)
WORK=$(mktemp -d)
# PostgreSQL's server runs as the postgres user, who must reach the --at directory.
chmod 711 "$WORK"
MNT=$WORK/mnt
AT=$WORK/fs
mkdir -p "$MNT" "$AT"
PID=""

stop_mount() {
    if [[ -n "$PID" ]]; then
        "$BIN" unmount "$MNT" >/dev/null 2>&1 || kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
        PID=""
    fi
}
cleanup() {
    stop_mount
    mountpoint -q "$AT" && umount -l "$AT"
    mountpoint -q "$MNT" && umount -l "$MNT"
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_mount STORAGE [mount flags...]: serves STORAGE at $MNT, waits until it is up.
start_mount() {
    local storage=$1
    shift
    "$BIN" mount --storage "$storage" "$@" "$MNT" 2>"$WORK/mount.log" &
    PID=$!
    for _ in $(seq 600); do
        if [[ -e "$MNT/disk" ]] && { [[ " $* " != *" --at "* ]] || mountpoint -q "$AT"; }; then return 0; fi
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/mount.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "the mount did not come up" >&2
    exit 1
}

stat_of() { python3 -c "import json,sys; print(json.load(open('$MNT/stats.json'))['$1'])"; }

part_a() {
    command -v fio >/dev/null || apt-get install -y -q fio >/dev/null
    # 30% spare: the hybrid FTLs need room for their log blocks on so small a device.
    local geometry=(--chips 2 --blocks-per-chip 64 --over-provisioning 0.3)
    echo "| storage | fio on the mounted disk: WA | ftl-bench: WA | difference |"
    echo "|---|---:|---:|---:|"
    for storage in ftl:page ftl:dftl ftl:bast ftl:fast noftl; do
        start_mount "$storage" "${geometry[@]}"
        local size pages
        size=$(stat_of disk_bytes)
        pages=$((size / 4096))
        # Fill once in order, then age with 4x the capacity of uniform random writes
        # (ftl-bench's default warm-up), then measure as many random writes again.
        fio --name=fill --filename="$MNT/disk" --rw=write --bs=1M --direct=1 --size="$size" >/dev/null
        fio --name=age --filename="$MNT/disk" --rw=randwrite --bs=4k --direct=1 --norandommap \
            --randseed=1 --size="$size" --io_size=$((4 * size)) >/dev/null
        local p0 h0 p1 h1
        p0=$(stat_of flash_programs)
        h0=$(stat_of host_writes)
        fio --name=measure --filename="$MNT/disk" --rw=randwrite --bs=4k --direct=1 --norandommap \
            --randseed=2 --size="$size" --io_size=$((10 * size)) >/dev/null
        p1=$(stat_of flash_programs)
        h1=$(stat_of host_writes)
        stop_mount
        local kind=${storage#ftl:}
        rm -f "$OUT/ftl-bench-$kind.json"
        "$BIN" ftl-bench --ftl "$kind" "${geometry[@]}" --pattern uniform --writes $((10 * pages)) \
            --warmup $((4 * pages)) --seed 1 --json "$OUT/ftl-bench-$kind.json" >/dev/null
        python3 - "$storage" "$p0" "$h0" "$p1" "$h1" "$OUT/ftl-bench-$kind.json" "$OUT/fio-$kind.json" <<'EOF'
import json, sys
storage, p0, h0, p1, h1, bench, out = sys.argv[1:]
fio_wa = (int(p1) - int(p0)) / (int(h1) - int(h0))
ref = json.load(open(bench))
bench_wa = ref["write_amplification"]
json.dump({"storage": storage, "fio_write_amplification": fio_wa, "ftl_bench_write_amplification": bench_wa,
           "host_writes": int(h1) - int(h0), "flash_programs": int(p1) - int(p0)}, open(out, "w"), indent=1)
print(f"| {storage} | {fio_wa:.3f} | {bench_wa:.3f} | {100 * (fio_wa / bench_wa - 1):+.1f}% |")
EOF
    done
}

part_b() {
    local rows=10000 value=1024
    echo "| journal | flash programs per overwrite, ext4 on the mount | same through the VFS (bench --engine sqlite) |"
    echo "|---|---:|---:|"
    for journal in wal delete; do
        rm -f "$WORK/disk.img"
        start_mount ftl:page --chips 16 --blocks-per-chip 64 --image "$WORK/disk.img" --fs ext4 --at "$AT"
        # sqlite-bench as crates/workloads/src/sqlite/kv.rs runs it: table test(key BLOB
        # PRIMARY KEY, value BLOB), exclusive locking, REPLACE INTO a 16-byte key drawn
        # uniformly from 0..rows, one row per transaction; fillrandom, then overwrite.
        local sqlite_bench='
import random, sqlite3, sys
path, journal, rows, value, op = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(1 if op == "fillrandom" else 2)
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA locking_mode=EXCLUSIVE")
db.execute(f"PRAGMA journal_mode={journal}")
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE IF NOT EXISTS test (key BLOB PRIMARY KEY, value BLOB)")
for _ in range(rows):
    key = b"%016d" % rng.randrange(rows)
    db.execute("REPLACE INTO test VALUES (?, ?)", (key, rng.randbytes(value)))
db.close()
'
        python3 -c "$sqlite_bench" "$AT/bench.db" "$journal" "$rows" "$value" fillrandom
        local p0
        p0=$(stat_of flash_programs)
        python3 -c "$sqlite_bench" "$AT/bench.db" "$journal" "$rows" "$value" overwrite
        local p1
        p1=$(stat_of flash_programs)
        stop_mount
        local vfs=""
        if [[ $journal == wal ]]; then
            # The VFS path's Base-WAL: SQLite's WAL through the file layer, no file system.
            vfs=$OUT/vfs-base-wal.json
            rm -f "$vfs"
            "$BIN" bench --engine sqlite --storage ftl:page --chips 16 --blocks-per-chip 64 \
                --ops fillrandom,overwrite --num "$rows" --value-size "$value" --journal base-wal --sync full \
                --seed 1 --json "$vfs" >/dev/null 2>&1
        fi
        python3 - "$journal" "$p0" "$p1" "$rows" "$vfs" "$OUT/ext4-sqlite-$journal.json" <<'EOF'
import json, sys
journal, p0, p1, rows, vfs, out = sys.argv[1:]
ext4 = (int(p1) - int(p0)) / int(rows)
vfs_per = json.load(open(vfs))["kinds"]["overwrite"]["flash"]["flash_programs_per_transaction"] if vfs else None
json.dump({"journal": journal, "ext4_flash_programs_per_overwrite": ext4, "vfs_flash_programs_per_overwrite": vfs_per},
          open(out, "w"), indent=1)
print(f"| {journal} | {ext4:.2f} | {'n/a (no rollback journal on the VFS path)' if vfs_per is None else f'{vfs_per:.2f}'} |")
EOF
    done
}

part_c() {
    local pg
    pg=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    echo "| full_page_writes | flash programs per pgbench transaction | host page writes per transaction |"
    echo "|---|---:|---:|"
    for fpw in on off; do
        rm -f "$WORK/pg.img"
        start_mount ftl:page --chips 16 --blocks-per-chip 128 --image "$WORK/pg.img" --fs ext4 --at "$AT"
        mkdir -p "$AT/pg" && chown postgres "$AT/pg"
        su postgres -c "$pg/initdb -D $AT/pg/data -A trust >/dev/null"
        su postgres -c "$pg/pg_ctl -D $AT/pg/data -o '-c full_page_writes=$fpw -c listen_addresses= -k $AT/pg' -w start >/dev/null"
        su postgres -c "$pg/pgbench -h $AT/pg -i -s 1 postgres >/dev/null 2>&1"
        su postgres -c "psql -h $AT/pg -q -c CHECKPOINT postgres"
        local p0 h0 p1 h1
        p0=$(stat_of flash_programs)
        h0=$(stat_of host_writes)
        su postgres -c "$pg/pgbench -h $AT/pg -n -t 2000 -c 1 postgres >/dev/null"
        su postgres -c "psql -h $AT/pg -q -c CHECKPOINT postgres"
        p1=$(stat_of flash_programs)
        h1=$(stat_of host_writes)
        su postgres -c "$pg/pg_ctl -D $AT/pg/data -w stop >/dev/null"
        stop_mount
        python3 - "$fpw" "$p0" "$h0" "$p1" "$h1" "$OUT/pgbench-fpw-$fpw.json" <<'EOF'
import json, sys
fpw, p0, h0, p1, h1, out = sys.argv[1:]
tx = 2000
programs = (int(p1) - int(p0)) / tx
writes = (int(h1) - int(h0)) / tx
json.dump({"full_page_writes": fpw, "flash_programs_per_transaction": programs,
           "host_writes_per_transaction": writes}, open(out, "w"), indent=1)
print(f"| {fpw} | {programs:.2f} | {writes:.2f} |")
EOF
    done
}

for part in "${PARTS[@]}"; do
    echo "== ($part)"
    "part_$part"
done
