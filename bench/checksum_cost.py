"""What checksums cost: writing and verifying checksummed safetensors files.

For each size (default 100 MB and 1 GB of float32 tensors) it writes the
file three ways, side by side in one run: plain ``safetensors.torch.save_file``
(no fsync), ``atomic_write`` around it (TrainLab before checksums: temporary
file, fsync, rename) and ``trainlab.system.fileio.save_safetensors`` (the same plus
the checksum: one more read of the file to hash it); then
it times ``verify_safetensors`` on the first open (the whole file hashed) and
on a second open (the cached verdict: a stat and a small file read).  The
verdict is only cached for files older than ``RACY_SECONDS``, so the bench
waits that long before the first open.  The files are in the page cache
(just written), so the first open measures hashing, not a cold disk.

    python bench/checksum_cost.py [--sizes-mb 100,1000] [--repeat 3] [--quick] [--json]

The last line is a JSON object.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from pairs import Clock, bench_parser, emit, run_pairs, speaker


def timed(function) -> float:
    with Clock() as clock:
        function()
    return clock.wall


def main() -> int:
    parser = bench_parser(__doc__, "one 10 MB file, two pairs")
    parser.add_argument("--sizes-mb", default="100,1000", help="file sizes in MB (10^6 bytes), comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of writes of each kind, alternating (the median is shown)")
    args = parser.parse_args()
    if args.quick:
        args.sizes_mb, args.repeat = "10", 2
    say = speaker(args)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRAINLAB_HOME"] = str(Path(tmp) / "home")  # a private verdict cache
        import torch
        from safetensors.torch import save_file

        from trainlab.system import fileio

        results = []
        for size_mb in (int(s) for s in args.sizes_mb.split(",")):
            tensors = {"weight": torch.randn(size_mb * 1_000_000 // 4)}
            plain, checked = Path(tmp) / f"plain-{size_mb}.safetensors", Path(tmp) / f"checked-{size_mb}.safetensors"
            # interleaved and repeated: the disk's write-back makes any one write noisy
            writes = run_pairs({
                "plain": lambda: timed(lambda: save_file(tensors, str(plain))),
                "atomic": lambda: timed(lambda: fileio.atomic_write(plain, lambda tmp: save_file(tensors, str(tmp)))),
                "checked": lambda: timed(lambda: fileio.save_safetensors(checked, tensors)),
            }, args.repeat)  # fmt: skip
            write_plain, write_atomic, write_checked = (statistics.median(writes[way]) for way in ("plain", "atomic", "checked"))
            tensors.clear()  # the memory back before the verify
            time.sleep(fileio.RACY_SECONDS)  # younger files are re-hashed on purpose (coarse timestamps)
            first = timed(lambda: fileio.verify_safetensors(checked))
            second = timed(lambda: fileio.verify_safetensors(checked))
            size = checked.stat().st_size
            results.append(
                {
                    "size_mb": round(size / 1e6),
                    "write_plain_s": round(write_plain, 3),
                    "write_atomic_no_checksum_s": round(write_atomic, 3),
                    "write_with_checksum_s": round(write_checked, 3),
                    "verify_first_open_s": round(first, 3),
                    "verify_first_open_gb_per_s": round(size / first / 1e9, 2),
                    "verify_cached_open_ms": round(second * 1000, 3),
                }
            )
            plain.unlink()
            checked.unlink()
            r = results[-1]
            say(
                f"{r['size_mb']} MB: write {r['write_plain_s']:.2f} s plain, {r['write_atomic_no_checksum_s']:.2f} s atomic, "
                f"{r['write_with_checksum_s']:.2f} s atomic with checksum; verify first open {r['verify_first_open_s']:.3f} s "
                f"({r['verify_first_open_gb_per_s']} GB/s), cached open {r['verify_cached_open_ms']:.2f} ms"
            )
    return emit("checksum_cost", args, {"benchmark": "checksum_cost", "results": results, "cpu_count": os.cpu_count(),
                                        "load_average_1min_at_end": round(os.getloadavg()[0], 2)})  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
