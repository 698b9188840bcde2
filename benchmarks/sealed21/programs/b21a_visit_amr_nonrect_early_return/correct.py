import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PAR_Rank = jax.process_index
PAR_Size = jax.process_count


def UnifyMaximumValue(x):
    return int(np.asarray(multihost_utils.process_allgather(np.int32(x))).max())


def SumIntAcrossAllProcessors(x):
    return int(np.asarray(multihost_utils.process_allgather(np.int64(x))).sum())


class Patch:
    def __init__(self, patch_id, level, lo, hi, rectilinear=True):
        self.patch_id, self.level = patch_id, level
        self.lo, self.hi = np.asarray(lo), np.asarray(hi)
        self.rectilinear = rectilinear

    def ncells(self):
        return int(np.prod(self.hi - self.lo))


def load_active_patches(levels_on):
    """SAMRAI-like file: level 0 has one patch, level 1 twenty curvilinear ones (switched off here)."""
    patches = [Patch(0, 0, [0, 0, 0], [16, 16, 8], rectilinear=False)]
    for i in range(20):
        patches.append(Patch(i + 1, 1, [2 * i, 0, 0], [2 * i + 2, 4, 4], rectilinear=False))
    active = [p for p in patches if p.level in levels_on]
    # round-robin the active patches over the processors
    return [p for k, p in enumerate(active) if k % PAR_Size() == PAR_Rank()]


class StructuredDomainNesting:
    def __init__(self, patches):
        self.patches = patches
        self.ghost_zones = {}

    def ComputeGhostZones(self):
        all_rectilinear = all(p.rectilinear for p in self.patches)
        if UnifyMaximumValue(0 if all_rectilinear else 1) > 0:
            # Ghost zone nesting is only computed for rectilinear patches.
            return False

        nlevels = UnifyMaximumValue(max([p.level for p in self.patches], default=-1) + 1)
        extents = np.zeros((max(len(self.patches), 1), 7), np.int32)
        for k, p in enumerate(self.patches):
            extents[k] = [p.patch_id, *p.lo, *p.hi]
        count = UnifyMaximumValue(len(self.patches))
        padded = np.full((count, 7), -1, np.int32)
        padded[:len(self.patches)] = extents[:len(self.patches)]
        every = np.asarray(multihost_utils.process_allgather(padded)).reshape(-1, 7)
        every = every[every[:, 0] >= 0]
        for p in self.patches:
            self.ghost_zones[p.patch_id] = int(((every[:, 1:4] < p.hi) & (every[:, 4:7] > p.lo)).all(1).sum() - 1)
        return nlevels > 0


def main():
    patches = load_active_patches(levels_on={0})
    nesting = StructuredDomainNesting(patches)
    has_ghosts = nesting.ComputeGhostZones()
    total_cells = SumIntAcrossAllProcessors(sum(p.ncells() for p in patches))
    print(f"rank {PAR_Rank()}: {len(patches)} patches, ghost zones computed: {has_ghosts}")
    print("RESULT total_cells", total_cells)
    print("RESULT ghost_zone_patches", SumIntAcrossAllProcessors(len(nesting.ghost_zones)))


if __name__ == "__main__":
    main()
