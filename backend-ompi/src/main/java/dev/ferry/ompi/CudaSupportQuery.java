package dev.ferry.ompi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Asks the loaded Open MPI whether it carries CUDA device memory: {@code int MPIX_Query_cuda_support(void)}
 * through java.lang.foreign, on the very libmpi that libmpi_java loaded (found in /proc/self/maps).
 * Open MPI 5 answers only after MPI_Init (its accelerator framework is selected there), so this is
 * called after initialization.
 */
final class CudaSupportQuery {
    /** The answer and how it was obtained, for the probe report. */
    record Answer(boolean cudaAware, String explanation) {
    }

    private CudaSupportQuery() {
    }

    static Answer ask(Optional<Path> libmpi) {
        if (libmpi.isEmpty()) {
            return new Answer(false, "libmpi.so not found among the loaded libraries; assuming no CUDA support");
        }
        try {
            SymbolLookup lookup = SymbolLookup.libraryLookup(libmpi.get(), Arena.global());
            Optional<MemorySegment> sym = lookup.find("MPIX_Query_cuda_support");
            if (sym.isEmpty()) {
                return new Answer(false, "MPIX_Query_cuda_support is not exported (Open MPI built without the cuda extension)");
            }
            MethodHandle h = Linker.nativeLinker().downcallHandle(sym.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT));
            int v = (int) h.invokeExact();
            return new Answer(v != 0, "MPIX_Query_cuda_support() = " + v);
        } catch (Throwable e) {
            return new Answer(false, "MPIX_Query_cuda_support could not be called: " + e);
        }
    }
}
