"""Writing results so that nothing is lost and nothing is half-written.

- `files`: a file or directory is written under a temporary name beside its target and renamed
  into place only when complete; the temporary names carry the writer's process id, so leftovers
  of a process that was killed (`kill -9`) are recognised and removed by the next write. Results
  follow the user's umask; writing to a symbolic link writes to the file it points to, and
  writing to a FIFO or a device (`/dev/stdout`) writes straight into it. Failures to write (full
  disk, no permission, read-only file system) become one clear error, with nothing left behind.
- `dirs`: `--overwrite` replaces only a directory that bertkit wrote (each one carries a manifest
  of its files, `MANIFEST`), never the current directory, the home directory or a directory
  holding the run's own data, and never files that bertkit did not put there.
- `lock`: one run at a time writes an output.
- `records`: the prediction writers (JSON lines, CSV, TSV, CoNLL, SQuAD) shared by every task.

This face names what the rest of bertkit uses; each name lives in one of those modules.
"""

from bertkit.core.outputs.dirs import (
    INFO_FILE,
    MANIFEST,
    check_cache_dir,
    check_output_dir,
    check_outside_inputs,
    publish_dir,
    staged_dir,
    staging_dir,
    write_manifest,
)
from bertkit.core.outputs.files import (
    atomic_path,
    atomic_text,
    cannot_write,
    check_output_file,
    check_writable,
    discard,
    ensure_folder,
    host,
    pid_alive,
    recover_dir,
    write_json,
    writing_failed,
)
from bertkit.core.outputs.lock import LOCK_UNREADABLE_AFTER, OutputLock
from bertkit.core.outputs.records import OUTPUT_FORMATS, RecordWriter, flatten, json_line

__all__ = [
    "INFO_FILE", "LOCK_UNREADABLE_AFTER", "MANIFEST", "OUTPUT_FORMATS", "OutputLock", "RecordWriter",
    "atomic_path", "atomic_text", "cannot_write", "check_cache_dir", "check_output_dir", "check_output_file",
    "check_outside_inputs",
    "check_writable", "discard", "ensure_folder", "flatten", "host", "json_line", "pid_alive", "publish_dir",
    "recover_dir", "staged_dir", "staging_dir", "write_json", "write_manifest", "writing_failed",
]  # fmt: skip
