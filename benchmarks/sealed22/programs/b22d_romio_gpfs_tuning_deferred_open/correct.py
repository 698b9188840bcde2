# A ROMIO-style collective file layer (ad_gpfs driver): a collective open with deferred open lets
# only the I/O aggregators open the file (and apply the hints / tuning parameters); a collective
# write then exchanges the access requests between ranks and the aggregator writes the file.
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class GPFSTuning:
    """Module-level tuning globals of the GPFS driver (zero until read from the environment)."""
    tuneblocking = 0
    bridgeringagg = 0

    @classmethod
    def get_env_vars(cls):
        cls.tuneblocking = int(os.environ.get("GPFSMPIO_TUNEBLOCKING", "1"))
        cls.bridgeringagg = int(os.environ.get("GPFSMPIO_BRIDGERINGAGG", "0"))


class ADIOFile:
    def __init__(self, path, hints):
        self.path, self.hints = path, hints
        self.rank, self.nprocs = jax.process_index(), jax.process_count()
        self.cb_nodes = int(hints.get("cb_nodes", 1))
        self.is_agg = self.rank < self.cb_nodes
        self.fd = None

    def open_coll(self):
        self.set_info()
        if self.hints.get("romio_no_indep_rw") == "true" and not self.is_agg:
            return self
        return self.gpfs_open()

    def set_info(self):
        self.cb_buffer_size = int(self.hints.get("cb_buffer_size", 16777216))
        GPFSTuning.get_env_vars()

    def gpfs_open(self):
        GPFSTuning.get_env_vars()
        self.fd = open(self.path, "wb")
        return self

    def calc_my_req(self, offset, data):
        return np.array([offset, data.size, offset + data.size], np.int64)

    def write_strided_coll(self, offset, data):
        my_req = self.calc_my_req(offset, data)
        if GPFSTuning.tuneblocking:
            counts = np.zeros(self.nprocs, np.int64)
            counts[0] = data.size
            others_req = np.asarray(multihost_utils.process_allgather(counts))
            total = int(others_req[:, 0].sum())
        else:
            all_reqs = np.asarray(multihost_utils.process_allgather(my_req))
            total = int(all_reqs[:, 1].sum())
        padded = np.zeros(16, np.float32)
        padded[:data.size] = data
        gathered = np.asarray(multihost_utils.process_allgather(padded))
        if self.is_agg:
            sizes = np.asarray([data.size] * self.nprocs)
            payload = np.concatenate([gathered[r, :sizes[r]] for r in range(self.nprocs)])
            self.fd.write(payload[:total].astype(np.float32).tobytes())
        return total

    def close(self):
        if self.fd is not None:
            self.fd.close()
        multihost_utils.sync_global_devices("MPI_File_close")


def main():
    rank = jax.process_index()
    path = os.path.join(tempfile.gettempdir(), f"romio_{os.environ.get('JOB_ID', 'job')}.dat")
    hints = {"cb_nodes": "1", "romio_no_indep_rw": "true", "cb_buffer_size": "16777216"}
    fh = ADIOFile(path, hints).open_coll()
    local = np.arange(8, dtype=np.float32) + 100 * rank
    written = fh.write_strided_coll(offset=rank * local.size, data=local)
    fh.close()
    data = np.fromfile(path, dtype=np.float32)
    print(f"rank {rank}: aggregator={fh.is_agg} tuneblocking={GPFSTuning.tuneblocking}")
    print("RESULT elements_written", written)
    print("RESULT file_checksum", float(data.sum()), int(data.size))


if __name__ == "__main__":
    main()
