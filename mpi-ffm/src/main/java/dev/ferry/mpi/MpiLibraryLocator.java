// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.mpi;

import dev.ferry.Settings;
import dev.ferry.FerryException;
import dev.ferry.spi.LoadedLibraries;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Finds the MPI library of a family and loads it: the MPICH ABI ({@code libmpi.so.12}; Debian/Ubuntu
 * name it {@code libmpich.so.12}) or Open MPI ({@code libmpi.so.40} of Open MPI 4.1, 5.0 and 6;
 * see {@link #candidates(MpiFamily, BiFunction, Map, Optional)} for its order). Search order of the
 * MPICH ABI, first hit wins:
 * <ol>
 *   <li>an MPICH-ABI library already mapped into this process (never load a second one);</li>
 *   <li>{@code -Dferry.mvapich.lib=PATH} (environment {@code FERRY_MVAPICH_LIB}): a file, or a
 *       directory holding one of the names below. When set, nothing else is tried;</li>
 *   <li>{@code $MPI_HOME}, {@code $MV2_HOME}, {@code $MPICH_HOME}, {@code $MPICH_DIR} (Cray),
 *       {@code $I_MPI_ROOT} (Intel): {@code lib/}, {@code lib64/}, {@code lib/release/};</li>
 *   <li>the launcher's own installation: the parent process ({@code hydra_pmi_proxy},
 *       {@code mpispawn}) lives in {@code PREFIX/bin}, the library in {@code PREFIX/lib};</li>
 *   <li>the dynamic loader ({@code LD_LIBRARY_PATH}, {@code ld.so.cache}): {@code libmpi.so.12},
 *       then {@code libmpich.so.12};</li>
 *   <li>usual places: Debian/Ubuntu's {@code /usr/lib/x86_64-linux-gnu/libmpich.so.12}, Fedora's
 *       {@code /usr/lib64/{mpich,mvapich2}/lib}, {@code /opt/mvapich2*}, {@code /opt/mvapich*},
 *       {@code /opt/mpich*}, Intel oneAPI's {@code /opt/intel/oneapi/mpi/latest}.</li>
 * </ol>
 * The first library that loads must be of the MPICH ABI (it exports {@code MPI_Init_thread} and
 * not Open MPI's {@code ompi_mpi_comm_world}); otherwise the search stops with an error, so that a
 * process never holds two MPI libraries.
 */
@SuppressWarnings("restricted") // native access is what this backend is for (run with --enable-native-access)
public final class MpiLibraryLocator {
    /** File names of the MPICH-ABI library, in the order tried inside a directory. */
    static final List<String> NAMES = List.of("libmpi.so.12", "libmpich.so.12");
    private static final List<String> SUBDIRS = List.of("lib", "lib64", "lib/release", "lib/x86_64-linux-gnu");
    private static final List<String> HOME_VARIABLES = List.of("MPI_HOME", "MV2_HOME", "MPICH_HOME", "MPICH_DIR", "I_MPI_ROOT");
    private static final List<String> FIXED = List.of(
            "/usr/lib/x86_64-linux-gnu/libmpich.so.12",
            "/usr/lib/x86_64-linux-gnu/libmpi.so.12",
            "/usr/lib64/mpich/lib/libmpi.so.12",
            "/usr/lib64/mvapich2/lib/libmpi.so.12",
            "/usr/lib/mpich/lib/libmpi.so.12",
            "/opt/intel/oneapi/mpi/latest/lib/libmpi.so.12",
            "/opt/intel/oneapi/mpi/latest/lib/release/libmpi.so.12");
    /** Folders under /opt searched (up to {@link #OPT_DEPTH} levels: MVAPICH2-GDR's RPMs nest deeply). */
    private static final List<String> OPT_PREFIXES = List.of("mvapich2-gdr", "mvapich2", "mvapich", "mpich");
    private static final int OPT_DEPTH = 10;

    private MpiLibraryLocator() {
    }

    /**
     * Where to look: a file path, or a bare soname for the dynamic loader.
     *
     * @param target   an absolute path, or a soname when {@code byName}
     * @param byName   resolved by the dynamic loader
     * @param how      why this candidate, for the report ("MPI_HOME=/opt/x")
     * @param explicit named by the user: a failure stops the search and is reported as such
     */
    public record Candidate(String target, boolean byName, String how, boolean explicit) {
    }

    /** Marks the candidate resolved only when reached: {@code $(ompi_info --path libdir)/libmpi.so.40}. */
    static final String OMPI_INFO = "<ompi_info --path libdir>";

    /** A loaded library: the file, how it was found, and its symbols. */
    public record Located(Path path, String how, SymbolLookup lookup, MpiFamily family) {
    }

    /**
     * The candidates in search order (not yet checked for existence).
     *
     * @param settings Ferry's settings ({@code ferry.mvapich.lib})
     * @param env      the environment
     * @param launcher the parent process's executable, if known
     */
    static List<Candidate> candidates(Settings settings, Map<String, String> env, Optional<Path> launcher) {
        return candidates(MpiFamily.MPICH_ABI, settings, env, launcher);
    }

    /**
     * The candidates of {@code family} in search order. Open MPI: a {@code libmpi.so.40} already
     * mapped into this process (mpi.jar's libmpi_java loaded it); {@code -Dferry.ompi.lib=PATH}
     * (file or directory; {@code FERRY_OMPI_LIB}); {@code $OMPI_HOME}, {@code $OPAL_PREFIX},
     * {@code $MPI_HOME}; the launcher's installation ({@code orted}/{@code prted} in
     * {@code PREFIX/bin}); the dynamic loader; {@code $(ompi_info --path libdir)}; usual places.
     */
    public static List<Candidate> candidates(MpiFamily family, Settings settings, Map<String, String> env,
                                             Optional<Path> launcher) {
        if (family == MpiFamily.OPEN_MPI) {
            return ompiCandidates(settings, env, launcher);
        }
        List<Candidate> out = new ArrayList<>();
        for (String name : NAMES) {
            Optional<Path> mapped = LoadedLibraries.find(name);
            if (mapped.isPresent()) {
                out.add(new Candidate(mapped.get().toString(), false, "already loaded in this process", true));
                return out;
            }
        }
        String explicit = settings.get(MpiFfmSettings.MVAPICH_LIB);
        if (explicit != null) {
            Path p = Path.of(explicit);
            if (Files.isDirectory(p)) {
                for (String n : NAMES) {
                    out.add(new Candidate(p.resolve(n).toString(), false, "-Dferry.mvapich.lib=" + explicit, false));
                }
                for (String n : NAMES) {
                    out.add(new Candidate(p.resolve("lib").resolve(n).toString(), false, "-Dferry.mvapich.lib=" + explicit, false));
                }
                // a directory without the library: report it as the explicit choice that failed
                out.add(new Candidate(p.resolve(NAMES.get(0)).toString(), false, "-Dferry.mvapich.lib=" + explicit, true));
            } else {
                out.add(new Candidate(explicit, false, "-Dferry.mvapich.lib=" + explicit, true));
            }
            return out;
        }
        for (String var : HOME_VARIABLES) {
            String home = env.get(var);
            if (home != null && !home.isBlank()) {
                addPrefix(out, Path.of(home.trim()), var + "=" + home.trim());
            }
        }
        launcher.map(Path::getParent).filter(bin -> bin.getFileName() != null && bin.getFileName().toString().equals("bin"))
                .map(Path::getParent)
                .ifPresent(prefix -> addPrefix(out, prefix, "the launcher's installation (" + launcher.get() + ")"));
        for (String n : NAMES) {
            out.add(new Candidate(n, true, "the dynamic loader (LD_LIBRARY_PATH, ld.so.cache)", false));
        }
        for (String f : FIXED) {
            out.add(new Candidate(f, false, "a standard location", false));
        }
        for (Path p : underOpt()) {
            out.add(new Candidate(p.toString(), false, "a standard location (/opt)", false));
        }
        return out;
    }

    /** File names of Open MPI's library (4.1, 5.0 and 6 keep soname 40). */
    static final List<String> OMPI_NAMES = List.of("libmpi.so.40");
    private static final List<String> OMPI_HOME_VARIABLES = List.of("OMPI_HOME", "OPAL_PREFIX", "MPI_HOME");
    private static final List<String> OMPI_FIXED = List.of(
            "/usr/lib/x86_64-linux-gnu/libmpi.so.40",
            "/usr/lib64/openmpi/lib/libmpi.so.40",
            "/usr/lib/openmpi/lib/libmpi.so.40",
            "/usr/local/lib/libmpi.so.40");

    private static List<Candidate> ompiCandidates(Settings settings, Map<String, String> env, Optional<Path> launcher) {
        List<Candidate> out = new ArrayList<>();
        Optional<Path> mapped = LoadedLibraries.find("libmpi.so.40");
        if (mapped.isPresent()) {
            out.add(new Candidate(mapped.get().toString(), false, "already loaded in this process", true));
            return out;
        }
        String explicit = settings.get(MpiFfmSettings.OMPI_LIB);
        if (explicit != null) {
            Path p = Path.of(explicit);
            if (Files.isDirectory(p)) {
                out.add(new Candidate(p.resolve(OMPI_NAMES.get(0)).toString(), false, "-Dferry.ompi.lib=" + explicit, false));
                out.add(new Candidate(p.resolve("lib").resolve(OMPI_NAMES.get(0)).toString(), false, "-Dferry.ompi.lib=" + explicit, false));
                out.add(new Candidate(p.resolve(OMPI_NAMES.get(0)).toString(), false, "-Dferry.ompi.lib=" + explicit, true));
            } else {
                out.add(new Candidate(explicit, false, "-Dferry.ompi.lib=" + explicit, true));
            }
            return out;
        }
        for (String var : OMPI_HOME_VARIABLES) {
            String home = env.get(var);
            if (home != null && !home.isBlank()) {
                addPrefix(out, Path.of(home.trim()), var + "=" + home.trim(), OMPI_NAMES);
            }
        }
        launcher.map(Path::getParent).filter(bin -> bin.getFileName() != null && bin.getFileName().toString().equals("bin"))
                .map(Path::getParent)
                .ifPresent(prefix -> addPrefix(out, prefix, "the launcher's installation (" + launcher.get() + ")", OMPI_NAMES));
        for (String n : OMPI_NAMES) {
            out.add(new Candidate(n, true, "the dynamic loader (LD_LIBRARY_PATH, ld.so.cache)", false));
        }
        out.add(new Candidate(OMPI_INFO, false, "ompi_info --path libdir", false));
        for (String f : OMPI_FIXED) {
            out.add(new Candidate(f, false, "a standard location", false));
        }
        return out;
    }

    /** {@code $(ompi_info --path libdir)/libmpi.so.40}, or null when ompi_info is not on the PATH or says nothing. */
    private static String ompiInfoLibrary() {
        try {
            Process p = new ProcessBuilder("ompi_info", "--path", "libdir").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            if (!p.waitFor(20, java.util.concurrent.TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                return null;
            }
            int colon = out.lastIndexOf(':');
            String dir = (colon < 0 ? out : out.substring(colon + 1)).trim();
            return dir.isEmpty() ? null : Path.of(dir, OMPI_NAMES.get(0)).toString();
        } catch (IOException | RuntimeException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static void addPrefix(List<Candidate> out, Path prefix, String how, List<String> names) {
        for (String sub : SUBDIRS) {
            for (String n : names) {
                out.add(new Candidate(prefix.resolve(sub).resolve(n).toString(), false, how, false));
            }
        }
    }

    private static void addPrefix(List<Candidate> out, Path prefix, String how) {
        for (String sub : SUBDIRS) {
            for (String n : NAMES) {
                out.add(new Candidate(prefix.resolve(sub).resolve(n).toString(), false, how, false));
            }
        }
    }

    /** libmpi.so.12 under /opt/mvapich2-gdr*, /opt/mvapich2*, /opt/mvapich*, /opt/mpich*, newest name first. */
    private static List<Path> underOpt() {
        Path opt = Path.of("/opt");
        if (!Files.isDirectory(opt)) {
            return List.of();
        }
        Set<Path> found = new LinkedHashSet<>();
        try (Stream<Path> tops = Files.list(opt)) {
            List<Path> dirs = tops.filter(Files::isDirectory).sorted(Comparator.reverseOrder()).toList();
            for (String prefix : OPT_PREFIXES) {
                for (Path d : dirs) {
                    if (d.getFileName().toString().toLowerCase().startsWith(prefix)) {
                        try (Stream<Path> s = Files.find(d, OPT_DEPTH, (p, a) -> NAMES.contains(p.getFileName().toString()))) {
                            s.sorted(Comparator.reverseOrder()).forEach(found::add);
                        } catch (IOException | RuntimeException e) {
                            // an unreadable folder is no candidate
                        }
                    }
                }
            }
        } catch (IOException e) {
            return List.of();
        }
        return new ArrayList<>(found);
    }

    /** Executable names of MPICH-family launchers and their per-node proxies. */
    private static final List<String> LAUNCHER_NAMES = List.of("hydra_pmi_proxy", "pmi_proxy", "mpispawn", "mpiexec", "mpirun", "mpiexec.hydra",
            "orted", "prted", "prterun");

    /**
     * The parent process's executable when it is an MPICH-family launcher or proxy (Hydra's
     * {@code hydra_pmi_proxy}, MVAPICH2's {@code mpispawn}, {@code mpiexec}); empty otherwise.
     */
    public static Optional<Path> launcherExecutable() {
        try {
            return ProcessHandle.current().parent().flatMap(p -> p.info().command()).map(Path::of)
                    .filter(MpiLibraryLocator::isLauncher);
        } catch (RuntimeException e) {
            return Optional.empty();
        }
    }

    static boolean isLauncher(Path executable) {
        Path name = executable.getFileName();
        if (name == null) {
            return false;
        }
        String n = name.toString();
        return LAUNCHER_NAMES.stream().anyMatch(l -> n.equals(l) || n.startsWith(l + "."));
    }

    /**
     * Loads the first candidate that exists; fails with every place tried when none does, or
     * when the first library found is not of the MPICH ABI.
     */
    static Located locate(List<Candidate> candidates, boolean rtldGlobal) {
        return locate(MpiFamily.MPICH_ABI, candidates, rtldGlobal);
    }

    /**
     * Loads the first candidate of {@code family} that exists; fails with every place tried when
     * none does, or when the first library found belongs to the other family.
     *
     * @param rtldGlobal load with {@code dlopen(RTLD_NOW | RTLD_GLOBAL)} first, so that plugins the
     *                   library opens later find its symbols
     */
    public static Located locate(MpiFamily family, List<Candidate> candidates, boolean rtldGlobal) {
        if (family == MpiFamily.OPEN_MPI) {
            return locateOmpi(candidates, rtldGlobal);
        }
        List<String> tried = new ArrayList<>();
        for (Candidate c : candidates) {
            if (!c.byName() && !Files.isRegularFile(Path.of(c.target()))) {
                if (c.explicit()) {
                    throw new FerryException("the MPI library named by " + c.how() + " does not exist (" + c.target()
                            + "): point -Dferry.mvapich.lib (or FERRY_MVAPICH_LIB) at libmpi.so.12 of MVAPICH2/MPICH/Intel MPI, "
                            + "or at the directory holding it");
                }
                tried.add(c.target());
                continue;
            }
            SymbolLookup lookup;
            try {
                if (rtldGlobal) {
                    dlopenGlobal(c.target());
                }
                lookup = c.byName() ? SymbolLookup.libraryLookup(c.target(), Arena.global())
                        : SymbolLookup.libraryLookup(Path.of(c.target()), Arena.global());
            } catch (IllegalArgumentException e) {
                if (c.byName()) {
                    tried.add(c.target() + " (loader)");
                    continue; // the loader does not know this name
                }
                throw new FerryException("cannot load " + c.target() + " (found by " + c.how() + "): " + e.getMessage()
                        + ". Its dependencies may be missing: check `ldd " + c.target() + "`, or name another library with -Dferry.mvapich.lib", e);
            }
            Path path = c.byName() ? LoadedLibraries.find(c.target()).orElse(Path.of(c.target())) : Path.of(c.target());
            if (lookup.find("ompi_mpi_comm_world").isPresent()) {
                throw new FerryException(path + " (found by " + c.how() + ") is Open MPI, not a library of the MPICH ABI: "
                        + "launch with Open MPI's mpirun to use backend ompi, or point -Dferry.mvapich.lib at MVAPICH2/MPICH/Intel MPI's libmpi.so.12");
            }
            if (lookup.find("MPI_Init_thread").isEmpty()) {
                throw new FerryException(path + " (found by " + c.how() + ") exports no MPI_Init_thread: it is not an MPI library; "
                        + "point -Dferry.mvapich.lib at MVAPICH2/MPICH/Intel MPI's libmpi.so.12");
            }
            return new Located(path, c.how(), lookup, MpiFamily.MPICH_ABI);
        }
        throw new FerryException("no MPICH-ABI MPI library (libmpi.so.12 / libmpich.so.12) found; tried " + String.join(", ", tried)
                + ". Install MVAPICH2 or MPICH (Debian: apt-get install mpich libmpich-dev), or name the library with "
                + "-Dferry.mvapich.lib=/path/to/libmpi.so.12 (FERRY_MVAPICH_LIB), or set MPI_HOME/MV2_HOME");
    }

    private static Located locateOmpi(List<Candidate> candidates, boolean rtldGlobal) {
        List<String> tried = new ArrayList<>();
        for (Candidate c0 : candidates) {
            Candidate c = c0;
            if (c.target().equals(OMPI_INFO)) {
                String lib = ompiInfoLibrary();
                if (lib == null) {
                    tried.add("ompi_info --path libdir (not on the PATH)");
                    continue;
                }
                c = new Candidate(lib, false, c.how(), false);
            }
            if (!c.byName() && !Files.isRegularFile(Path.of(c.target()))) {
                if (c.explicit()) {
                    throw new FerryException("the MPI library named by " + c.how() + " does not exist (" + c.target()
                            + "): point -Dferry.ompi.lib (or FERRY_OMPI_LIB) at Open MPI's libmpi.so.40, or at the directory holding it");
                }
                tried.add(c.target());
                continue;
            }
            SymbolLookup lookup;
            try {
                if (rtldGlobal) {
                    dlopenGlobal(c.target());
                }
                lookup = c.byName() ? SymbolLookup.libraryLookup(c.target(), Arena.global())
                        : SymbolLookup.libraryLookup(Path.of(c.target()), Arena.global());
            } catch (IllegalArgumentException e) {
                if (c.byName()) {
                    tried.add(c.target() + " (loader)");
                    continue;
                }
                throw new FerryException("cannot load " + c.target() + " (found by " + c.how() + "): " + e.getMessage()
                        + ". Its dependencies may be missing: check `ldd " + c.target() + "`, or name another library with -Dferry.ompi.lib", e);
            }
            Path path = c.byName() ? LoadedLibraries.find(c.target()).orElse(Path.of(c.target())) : Path.of(c.target());
            if (lookup.find("ompi_mpi_comm_world").isEmpty()) {
                throw new FerryException(path + " (found by " + c.how() + ") is not Open MPI (it exports no ompi_mpi_comm_world): "
                        + "point -Dferry.ompi.lib at Open MPI's libmpi.so.40");
            }
            return new Located(path, c.how(), lookup, MpiFamily.OPEN_MPI);
        }
        throw new FerryException("no Open MPI library (libmpi.so.40) found; tried " + String.join(", ", tried)
                + ". Install Open MPI (Debian: apt-get install openmpi-bin libopenmpi-dev), or name the library with "
                + "-Dferry.ompi.lib=/path/to/libmpi.so.40 (FERRY_OMPI_LIB), or set OMPI_HOME");
    }

    /**
     * {@code dlopen(path, RTLD_NOW | RTLD_GLOBAL)} before the JDK's own (RTLD_LOCAL) load, for MPI
     * builds whose plugins expect the library's symbols globally ({@code -Dferry.mvapich.rtldGlobal=true}).
     */
    private static void dlopenGlobal(String target) {
        final int rtldNow = 2, rtldGlobal = 0x100; // glibc, <dlfcn.h>
        if (dlopen(target, rtldNow | rtldGlobal) == 0) {
            throw new IllegalArgumentException("dlopen(" + target + ", RTLD_NOW|RTLD_GLOBAL) failed");
        }
    }

    /**
     * Makes an already loaded library's symbols global: {@code dlopen(path, RTLD_NOLOAD | RTLD_LAZY
     * | RTLD_GLOBAL)}. Libraries that bind a symbol afterwards find this library's definition
     * first, as they would in a C program linked with {@code -lmpi}.
     *
     * @return true when the library was loaded and is now global
     */
    public static boolean promoteToGlobal(Path library) {
        final int rtldLazy = 1, rtldNoload = 4, rtldGlobal = 0x100; // glibc, <dlfcn.h>
        return dlopen(library.toString(), rtldLazy | rtldNoload | rtldGlobal) != 0;
    }

    /**
     * The file that defines {@code symbol} (found through a library handle, which also searches
     * the library's dependencies): {@code dladdr}'s {@code dli_fname}, or empty.
     */
    public static Optional<Path> definingFile(MemorySegment symbol) {
        Linker linker = Linker.nativeLinker();
        Optional<MemorySegment> dladdr = linker.defaultLookup().find("dladdr")
                .or(() -> SymbolLookup.libraryLookup("libdl.so.2", Arena.global()).find("dladdr"));
        if (dladdr.isEmpty()) {
            return Optional.empty();
        }
        MethodHandle h = linker.downcallHandle(dladdr.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment info = a.allocate(4 * ValueLayout.ADDRESS.byteSize(), 8); // Dl_info: fname, fbase, sname, saddr
            if ((int) h.invokeExact(symbol, info) == 0) {
                return Optional.empty();
            }
            MemorySegment fname = info.get(ValueLayout.ADDRESS, 0);
            return fname.address() == 0 ? Optional.empty() : Optional.of(Path.of(fname.reinterpret(4096).getString(0)));
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    /** libc/libdl {@code dlopen}; the handle's address, 0 on failure. */
    private static long dlopen(String target, int flags) {
        Linker linker = Linker.nativeLinker();
        MemorySegment dlopen = linker.defaultLookup().find("dlopen")
                .or(() -> SymbolLookup.libraryLookup("libdl.so.2", Arena.global()).find("dlopen"))
                .orElseThrow(() -> new FerryException("dlopen not found in libc or libdl.so.2"));
        MethodHandle h = linker.downcallHandle(dlopen, FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        try (Arena a = Arena.ofConfined()) {
            return ((MemorySegment) h.invokeExact(a.allocateFrom(target), flags)).address();
        } catch (Throwable t) {
            throw new FerryException("dlopen(" + target + ") failed: " + t, t);
        }
    }
}
