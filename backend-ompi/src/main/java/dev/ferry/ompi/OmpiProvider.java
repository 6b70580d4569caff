package dev.ferry.ompi;

import dev.ferry.Communicator;
import dev.ferry.FerryException;
import dev.ferry.cuda.Cuda;
import dev.ferry.spi.Capability;
import dev.ferry.spi.Launch;
import dev.ferry.spi.MpiFamilyChoice;
import dev.ferry.spi.OpenContext;
import dev.ferry.spi.Probe;
import dev.ferry.spi.ProbeContext;
import dev.ferry.spi.TransportProvider;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Open MPI through its own Java bindings. Available when the process was launched by Open MPI (or
 * is a singleton that chose it), mpi.jar is on the class path and MPI initializes. Device buffers
 * go straight to MPI only when {@code MPIX_Query_cuda_support()} says yes.
 */
public final class OmpiProvider implements TransportProvider {
    /** Priority when device buffers go straight to a CUDA-aware Open MPI. */
    static final int PRIORITY_CUDA_AWARE = 100;
    /** Priority for host buffers only. */
    static final int PRIORITY_HOST = 20;

    @Override
    public String name() {
        return "ompi";
    }

    @Override
    public String description() {
        return "Open MPI through mpi.jar; device buffers direct when Open MPI is CUDA-aware";
    }

    @Override
    public Probe probe(ProbeContext context) {
        MpiFamilyChoice family = MpiFamilyChoice.of(context.launch());
        if (family.family() != Launch.Family.OPEN_MPI) {
            return Probe.unavailable(name(), "this process belongs to the MPICH family (" + family.reason()
                    + "); Open MPI is not loaded beside it: launch with Open MPI's mpirun (or srun --mpi=pmix) to use ompi", null);
        }
        try {
            Class.forName("mpi.MPI", false, OmpiProvider.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return Probe.unavailable(name(), "Open MPI's mpi.jar is not on the class path: add $(ompi_info --path libdir)/mpi.jar "
                    + "(Debian/Ubuntu ship none: ./ferry setup builds it from the matching source package)", e);
        }
        // CUDA first: the GPU is chosen from the local rank before MPI_Init, as CUDA-aware MPIs want
        // (when the launcher gave none, after MPI_Init from MPI's shared-memory split)
        if (Cuda.isAvailable() && context.launch().localRank() >= 0) {
            Cuda.defaultDevice();
        }
        // libmpi_java.so: mpirun puts Open MPI's libdir on java.library.path, srun does not
        java.util.Optional<String> javaLibrary = OmpiJavaLibrary.prepare();
        OmpiRuntime rt;
        try {
            rt = OmpiRuntime.get();
        } catch (FerryException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            String hint = cause instanceof LinkageError
                    ? OmpiJavaLibrary.explain(cause) + "; the mpi.jar must match the loaded Open MPI"
                    : "MPI_Init failed: " + cause.getMessage();
            return Probe.unavailable(name(), hint, cause);
        }
        if (Cuda.isAvailable()) {
            Cuda.defaultDevice();
        }
        Map<String, String> details = new LinkedHashMap<>();
        details.put("library", rt.version + " at " + rt.library.map(Object::toString).orElse("?"));
        details.put("cuda-aware", (rt.cuda.cudaAware() ? "yes" : "no") + " (" + rt.cuda.explanation() + ")");
        details.put("threads", rt.threadLevelName());
        details.put("mpi family", family.reason());
        details.put("node-local rank", dev.ferry.spi.NodeLocal.describe());
        javaLibrary.ifPresent(f -> details.put("libmpi_java", f));
        if (!rt.workarounds.isEmpty()) {
            details.put("workarounds", String.join("; ", rt.workarounds));
        }
        EnumSet<Capability> caps = EnumSet.of(Capability.HOST_BUFFERS, Capability.NONBLOCKING, Capability.COLLECTIVES);
        boolean direct = rt.cuda.cudaAware() && Cuda.isAvailable();
        if (direct) {
            caps.add(Capability.CUDA_DEVICE_BUFFERS);
            caps.add(Capability.CUDA_AWARE_MPI);
        }
        String reason = rt.version + (rt.cuda.cudaAware() ? ", CUDA-aware" : ", not CUDA-aware")
                + (direct ? ": device buffers go straight to MPI" : rt.cuda.cudaAware() ? " but CUDA is unavailable here: host buffers only" : ": host buffers only");
        return Probe.available(name(), direct ? PRIORITY_CUDA_AWARE : PRIORITY_HOST, caps, reason, details);
    }

    @Override
    public Communicator open(OpenContext context) {
        // mpi.jar's classes are touched only from here on (OmpiCommunicator), never by the provider
        // class itself: without mpi.jar the provider still loads and its probe says what is missing
        return OmpiCommunicator.world(OmpiRuntime.get());
    }

    @Override
    public void shutdown() {
        dev.ferry.spi.MpiLifecycle.finalizeNow();
    }
}
