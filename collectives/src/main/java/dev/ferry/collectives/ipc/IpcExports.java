// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.collectives.ipc;

import dev.ferry.DeviceAllocation;
import dev.ferry.DeviceBuffer;
import dev.ferry.cuda.CudaIpc;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The owning side of CUDA IPC: the handle of each device allocation this process offers to
 * peers, made once per allocation (cuMemGetAddressRange for the real base, so that slices and
 * buffers wrapped in the middle of an allocation work, then cuIpcGetMemHandle).
 *
 * <p>Allocations Ferry owns are cached by allocation, and dropped by the allocation's release
 * listener ({@link DeviceAllocation#onRelease}); their generation is the allocation's process-unique
 * id, so memory allocated again at the same address has a new generation and peers' caches see
 * their mapping is stale. Borrowed memory ({@link DeviceBuffer#wrap}) can be freed behind Ferry's
 * back, so its handle is asked for at every offer and its generation derived from the handle bytes.
 */
public final class IpcExports {
    private record Entry(CudaIpc.Export export, long generation) {
    }

    private final ConcurrentHashMap<Long, Entry> owned = new ConcurrentHashMap<>();

    /** The offer for {@code buffer}: handle, base, size, the buffer's offset and a generation. */
    public IpcOffer offer(DeviceBuffer buffer) {
        DeviceAllocation a = buffer.allocation();
        Entry e;
        if (a.isOwned()) {
            e = owned.get(a.id());
            if (e == null) {
                e = new Entry(CudaIpc.export(buffer), a.id());
                if (owned.putIfAbsent(a.id(), e) == null) {
                    long id = a.id();
                    a.onRelease(() -> owned.remove(id));
                    if (!a.isAlive()) {
                        owned.remove(id); // released between the export and the listener
                    }
                }
            }
        } else {
            CudaIpc.Export x = CudaIpc.export(buffer);
            e = new Entry(x, Long.MIN_VALUE | (Arrays.hashCode(x.handle()) & 0xffffffffL) << 20 ^ (x.base() & 0xfffffL));
        }
        CudaIpc.Export x = e.export();
        return new IpcOffer(x.handle(), x.base(), x.size(), buffer.address() - x.base(), e.generation(), buffer.device());
    }

    /** Allocations with a cached handle, for leak checks. */
    public int size() {
        return owned.size();
    }

    public void clear() {
        owned.clear();
    }
}
