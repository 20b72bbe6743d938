"""Type stubs of the native module (crates/python). The package's modules wrap it."""

from typing import Callable, List, Optional, Tuple

GIT_COMMIT: str
PRESETS: List[str]

class DeltaflashError(Exception):
    """An error of the engine, device or workload; the message is the Rust one."""

class ConfigError(DeltaflashError):
    """An experiment config that cannot run; the message names the field."""

class Cancelled(DeltaflashError):
    """A run stopped by its CancelToken."""

class CancelToken:
    """Stops the runs it is passed to, from any thread."""

    def __init__(self) -> None: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

def run_experiment(
    config_json: str,
    cancel: Optional[CancelToken] = None,
    on_progress: Optional[Callable[[float, float, float], object]] = None,
) -> Tuple[str, List[Tuple[str, float]]]:
    """Runs an ExperimentConfig (JSON) without the GIL: the result JSON and the Table-7
    rows. Raises ConfigError, Cancelled, DeltaflashError, KeyboardInterrupt on Ctrl-C, or
    what on_progress raised."""

def resolve_config(config_json: str) -> str:
    """The config with its defaults filled in (JSON); raises ConfigError."""

def storage_config(text: str) -> str:
    """`noftl`, `ipl` or `ftl:KIND` as the config's storage value (JSON)."""

def advise_baseline(image: str, result_json: str, title: str) -> str:
    """The IPA advisor on a baseline run's image and result JSON: JSON with objects,
    recommendation, ddl (headed by title), log_records and sources."""

def check_grid_points(points: int, yes: bool) -> None:
    """Raises ConfigError for a grid of more than 10,000 points unless yes."""

def reproduce_runs(ids: List[str], scale: str) -> List[Tuple[str, str, str]]:
    """The runs of `reproduce` experiments at a scale: (key, label, input JSON)."""

def run_input(input_json: str) -> str:
    """Makes one `reproduce` run from its input JSON; its result JSON."""

def registered_workloads() -> List[Tuple[str, str, str]]:
    """(name, about, default parameters as JSON) of each registered workload."""

class Device:
    def __init__(
        self,
        preset: str = "paper-emulator",
        *,
        chips: Optional[int] = None,
        blocks_per_chip: Optional[int] = None,
        pages_per_block: Optional[int] = None,
        page_bytes: Optional[int] = None,
    ) -> None: ...
    def geometry_json(self) -> str: ...
    def add_region(
        self, name: str, *, ipa_mode: str = "none", over_provisioning: float = 0.10, max_chips: Optional[int] = None
    ) -> None: ...
    def region_names(self) -> List[str]: ...
    def region_shape(self, region: str) -> Tuple[int, int]: ...
    def write_page(self, region: str, lpn: int, data: bytes) -> int: ...
    def write_delta(self, region: str, lpn: int, offset: int, data: bytes) -> int: ...
    def read_page(self, region: str, lpn: int) -> Optional[Tuple[bytes, int]]: ...
    def trim(self, region: str, lpn: int) -> None: ...
    def counters_json(self) -> str: ...
    def region_json(self, region: str) -> str: ...
    @property
    def now_ns(self) -> int: ...

class Database:
    @staticmethod
    def open(
        path: str,
        *,
        preset: str = "paper-emulator",
        chips: Optional[int] = None,
        blocks_per_chip: Optional[int] = None,
        db_page_bytes: int = 4096,
        buffer_pages: int = 1024,
    ) -> "Database": ...
    def execute(self, sql: str) -> List[Tuple[str, object, object]]: ...
    def object_stats(self) -> List[Tuple[str, str, str, str, str]]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def in_transaction(self) -> bool: ...
