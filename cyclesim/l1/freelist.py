"""First-fit free list over an address range, allocating top-down like tt-metal's L1 heap."""

from __future__ import annotations


class FreeList:
    """Free blocks [start, end) sorted by address; top-down first fit; coalescing frees.

    A top-down request takes the highest-addressed free block that fits and is placed at that
    block's top end (tt-metal's `FreeListOpt` with `SearchPolicy::FIRST`, as read from the code).
    """

    __slots__ = ("start", "end", "alignment", "_blocks", "low_water")

    def __init__(self, start: int, end: int, alignment: int) -> None:
        self.start = start
        self.end = end
        self.alignment = alignment
        self._blocks: list[list[int]] = [[start, end]] if end > start else []
        self.low_water = end  # lowest address ever handed out (sizes a pool)

    def allocate_top_down(self, size: int) -> int | None:
        """Place `size` bytes at the top of the highest free block that fits; None if none does."""
        for index in range(len(self._blocks) - 1, -1, -1):
            block = self._blocks[index]
            address = (block[1] - size) // self.alignment * self.alignment
            if address >= block[0]:
                if address + size == block[1] and address == block[0]:
                    del self._blocks[index]
                elif address + size == block[1]:
                    block[1] = address
                else:  # the top was unaligned: keep the sliver above as its own block
                    self._blocks.insert(index + 1, [address + size, block[1]])
                    block[1] = address
                    if block[0] == block[1]:
                        del self._blocks[index]
                self.low_water = min(self.low_water, address)
                return address
        return None

    def free(self, address: int, size: int) -> None:
        """Return [address, address + size) to the list, merging with its neighbours."""
        end = address + size
        blocks = self._blocks
        index = 0
        while index < len(blocks) and blocks[index][0] < address:
            index += 1
        if (
            index > 0
            and blocks[index - 1][1] > address
            or index < len(blocks)
            and blocks[index][0] < end
        ):
            raise ValueError(f"double free of [{address}, {end})")
        merge_left = index > 0 and blocks[index - 1][1] == address
        merge_right = index < len(blocks) and blocks[index][0] == end
        if merge_left and merge_right:
            blocks[index - 1][1] = blocks[index][1]
            del blocks[index]
        elif merge_left:
            blocks[index - 1][1] = end
        elif merge_right:
            blocks[index][0] = address
        else:
            blocks.insert(index, [address, end])

    def blocks(self) -> list[tuple[int, int]]:
        """The free blocks, lowest address first."""
        return [(b[0], b[1]) for b in self._blocks]

    def free_bytes(self) -> int:
        """Total free bytes."""
        return sum(b[1] - b[0] for b in self._blocks)

    def largest_free(self) -> int:
        """Size of the largest free block."""
        return max((b[1] - b[0] for b in self._blocks), default=0)
