// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.nccl;

import dev.ferry.Settings;
import dev.ferry.spi.LoadedLibraries;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Finds NVIDIA's NCCL ({@code libnccl.so.2}) and loads it. Search order, first hit wins:
 * <ol>
 *   <li>a {@code libnccl.so*} already mapped into this process (never load a second one);</li>
 *   <li>{@code -Dferry.nccl.lib=PATH} (environment {@code FERRY_NCCL_LIB}): the file, or a
 *       directory holding it (or its {@code lib/}). When set, nothing else is tried;</li>
 *   <li>{@code $NCCL_HOME}, {@code $NCCL_ROOT}, {@code $NCCL_DIR}: {@code lib/}, {@code lib64/},
 *       {@code lib/x86_64-linux-gnu/};</li>
 *   <li>the dynamic loader ({@code LD_LIBRARY_PATH}, {@code ld.so.cache}): {@code libnccl.so.2};</li>
 *   <li>NVIDIA's Python wheel ({@code nvidia-nccl-cu13}, {@code nvidia-nccl-cu12}) in the layout
 *       {@code nvidia/nccl/lib/libnccl.so.2}: under the project's own wheel folder
 *       ({@code -Dferry.nccl.wheels=DIR}, else {@code $FERRY_HOME/.ferry/wheels}, else a
 *       {@code .ferry/wheels} in the working directory or above the jar of this class; each
 *       folder and its immediate sub-folders are searched), then under every site-packages
 *       folder of {@code $VIRTUAL_ENV}, {@code $CONDA_PREFIX}, {@code $PYTHONPATH},
 *       {@code ~/.local/lib/python3.*}, {@code /usr/local/lib/python3.*},
 *       {@code /usr/lib/python3*}, {@code /opt/conda/lib/python3.*};</li>
 *   <li>usual places: {@code /usr/lib/x86_64-linux-gnu/libnccl.so.2} (NVIDIA's Debian packages),
 *       {@code /usr/local/nccl/lib}, {@code /usr/local/cuda/lib64}, {@code /opt/nccl/lib}.</li>
 * </ol>
 * The first library that loads must export {@code ncclGetVersion}; otherwise the search stops
 * with an error (a file named libnccl.so.2 that is not NCCL is a mistake to report, not skip).
 */
@SuppressWarnings("restricted") // native access is what this backend is for (run with --enable-native-access)
final class NcclLibraryLocator {
    static final String NAME = "libnccl.so.2";
    /** Where a wheel puts the library, relative to a site-packages folder. */
    static final Path WHEEL_LAYOUT = Path.of("nvidia", "nccl", "lib", NAME);
    private static final List<String> SUBDIRS = List.of("lib", "lib64", "lib/x86_64-linux-gnu");
    private static final List<String> HOME_VARIABLES = List.of("NCCL_HOME", "NCCL_ROOT", "NCCL_DIR");
    private static final List<String> FIXED = List.of(
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
            "/usr/lib64/libnccl.so.2",
            "/usr/local/nccl/lib/libnccl.so.2",
            "/usr/local/cuda/lib64/libnccl.so.2",
            "/opt/nccl/lib/libnccl.so.2");

    private NcclLibraryLocator() {
    }

    /**
     * Where to look.
     *
     * @param target   an absolute path, or a soname when {@code byName}
     * @param byName   resolved by the dynamic loader
     * @param how      why this candidate, for the report
     * @param explicit named by the user: a missing file stops the search and is reported as such
     */
    record Candidate(String target, boolean byName, String how, boolean explicit) {
    }

    /** A loaded library: the file, how it was found, and its symbols. */
    record Located(Path path, String how, SymbolLookup lookup) {
    }

    /**
     * The candidates in search order (existence not yet checked, except for the wheel folders,
     * which are listed only where the file is).
     *
     * @param settings Ferry's settings ({@code ferry.nccl.lib}, {@code ferry.nccl.wheels})
     * @param env     the environment
     */
    static List<Candidate> candidates(Settings settings, Map<String, String> env) {
        return candidates(settings, env, LoadedLibraries.find("libnccl.so"));
    }

    /** As above, with the library already mapped into the process (if any) given. */
    static List<Candidate> candidates(Settings settings, Map<String, String> env, Optional<Path> mapped) {
        List<Candidate> out = new ArrayList<>();
        if (mapped.isPresent()) {
            out.add(new Candidate(mapped.get().toString(), false, "already loaded in this process", true));
            return out;
        }
        String explicit = settings.get(NcclSettings.LIB);
        if (explicit != null) {
            Path p = Path.of(explicit);
            if (Files.isDirectory(p)) {
                out.add(new Candidate(p.resolve(NAME).toString(), false, "-Dferry.nccl.lib=" + explicit, false));
                out.add(new Candidate(p.resolve("lib").resolve(NAME).toString(), false, "-Dferry.nccl.lib=" + explicit, false));
                out.add(new Candidate(p.resolve(WHEEL_LAYOUT).toString(), false, "-Dferry.nccl.lib=" + explicit, false));
                out.add(new Candidate(p.resolve(NAME).toString(), false, "-Dferry.nccl.lib=" + explicit, true));
            } else {
                out.add(new Candidate(explicit, false, "-Dferry.nccl.lib=" + explicit, true));
            }
            return out;
        }
        for (String var : HOME_VARIABLES) {
            String home = env.get(var);
            if (home != null && !home.isBlank()) {
                for (String sub : SUBDIRS) {
                    out.add(new Candidate(Path.of(home.trim()).resolve(sub).resolve(NAME).toString(), false, var + "=" + home.trim(), false));
                }
            }
        }
        out.add(new Candidate(NAME, true, "the dynamic loader (LD_LIBRARY_PATH, ld.so.cache)", false));
        for (Path w : wheelFolders(settings, env)) {
            for (Path lib : wheelLibraries(w)) {
                out.add(new Candidate(lib.toString(), false, "the project's NCCL wheel folder " + w, false));
            }
        }
        for (Path site : sitePackages(env)) {
            Path lib = site.resolve(WHEEL_LAYOUT);
            if (Files.isRegularFile(lib)) {
                out.add(new Candidate(lib.toString(), false, "NVIDIA's NCCL wheel in " + site, false));
            }
        }
        for (String f : FIXED) {
            out.add(new Candidate(f, false, "a standard location", false));
        }
        return out;
    }

    /** The project's wheel folders, existing ones only, most specific first. */
    static List<Path> wheelFolders(Settings settings, Map<String, String> env) {
        Set<Path> out = new LinkedHashSet<>();
        String s = settings.get(NcclSettings.WHEELS);
        if (s != null) {
            out.add(Path.of(s));
        }
        String home = env.get("FERRY_HOME");
        if (home != null && !home.isBlank()) {
            out.add(Path.of(home.trim(), ".ferry", "wheels"));
        }
        Path cwd = Path.of("").toAbsolutePath();
        for (Path p = cwd; p != null; p = p.getParent()) {
            out.add(p.resolve(".ferry").resolve("wheels"));
        }
        ownLocation().ifPresent(jar -> {
            for (Path p = jar.getParent(); p != null; p = p.getParent()) {
                out.add(p.resolve(".ferry").resolve("wheels"));
            }
        });
        List<Path> existing = new ArrayList<>();
        for (Path p : out) {
            Path n = p.toAbsolutePath().normalize();
            if (Files.isDirectory(n) && !existing.contains(n)) {
                existing.add(n);
            }
        }
        return existing;
    }

    /** {@code DIR/nvidia/nccl/lib/libnccl.so.2} and {@code DIR/*}{@code /nvidia/nccl/lib/libnccl.so.2}. */
    static List<Path> wheelLibraries(Path dir) {
        List<Path> out = new ArrayList<>();
        if (Files.isRegularFile(dir.resolve(WHEEL_LAYOUT))) {
            out.add(dir.resolve(WHEEL_LAYOUT));
        }
        try (Stream<Path> s = Files.list(dir)) {
            s.filter(Files::isDirectory).sorted(Comparator.reverseOrder())
                    .map(d -> d.resolve(WHEEL_LAYOUT)).filter(Files::isRegularFile).forEach(out::add);
        } catch (IOException | RuntimeException e) {
            // an unreadable folder holds no candidate
        }
        return out;
    }

    /** site-packages (and dist-packages) folders of the usual Python installations, existing ones only. */
    static List<Path> sitePackages(Map<String, String> env) {
        Set<Path> out = new LinkedHashSet<>();
        String pp = env.get("PYTHONPATH");
        if (pp != null) {
            for (String e : pp.split(":")) {
                if (!e.isBlank()) out.add(Path.of(e.trim()));
            }
        }
        List<Path> prefixes = new ArrayList<>();
        for (String v : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
            String p = env.get(v);
            if (p != null && !p.isBlank()) prefixes.add(Path.of(p.trim(), "lib"));
        }
        String home = env.get("HOME");
        if (home != null && !home.isBlank()) prefixes.add(Path.of(home.trim(), ".local", "lib"));
        prefixes.add(Path.of("/usr/local/lib"));
        prefixes.add(Path.of("/usr/lib"));
        prefixes.add(Path.of("/opt/conda/lib"));
        for (Path lib : prefixes) {
            if (!Files.isDirectory(lib)) continue;
            try (Stream<Path> s = Files.list(lib)) {
                s.filter(p -> p.getFileName().toString().startsWith("python3")).sorted(Comparator.reverseOrder()).forEach(py -> {
                    out.add(py.resolve("site-packages"));
                    out.add(py.resolve("dist-packages"));
                });
            } catch (IOException | RuntimeException e) {
                // skip
            }
        }
        List<Path> existing = new ArrayList<>();
        for (Path p : out) {
            if (Files.isDirectory(p)) existing.add(p);
        }
        return existing;
    }

    private static Optional<Path> ownLocation() {
        try {
            CodeSource cs = NcclLibraryLocator.class.getProtectionDomain().getCodeSource();
            return cs == null || cs.getLocation() == null ? Optional.empty() : Optional.of(Path.of(cs.getLocation().toURI()));
        } catch (URISyntaxException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Loads the first candidate that exists; fails with every place tried when none does. */
    static Located locate(List<Candidate> candidates) {
        List<String> tried = new ArrayList<>();
        for (Candidate c : candidates) {
            if (!c.byName() && !Files.isRegularFile(Path.of(c.target()))) {
                if (c.explicit()) {
                    throw new NcclException("the NCCL library named by " + c.how() + " does not exist (" + c.target()
                            + "): point -Dferry.nccl.lib (or FERRY_NCCL_LIB) at libnccl.so.2, or at the directory holding it");
                }
                tried.add(c.target());
                continue;
            }
            SymbolLookup lookup;
            try {
                lookup = c.byName() ? SymbolLookup.libraryLookup(c.target(), Arena.global())
                        : SymbolLookup.libraryLookup(Path.of(c.target()), Arena.global());
            } catch (IllegalArgumentException e) {
                if (c.byName()) {
                    tried.add(c.target() + " (loader)");
                    continue;
                }
                throw new NcclException("cannot load " + c.target() + " (found by " + c.how() + "): " + e.getMessage()
                        + ". Its dependencies may be missing: check `ldd " + c.target() + "`, or name another library with -Dferry.nccl.lib", e);
            }
            Path path = c.byName() ? LoadedLibraries.find("libnccl.so").orElse(Path.of(c.target())) : Path.of(c.target());
            if (lookup.find("ncclGetVersion").isEmpty()) {
                throw new NcclException(path + " (found by " + c.how() + ") exports no ncclGetVersion: it is not NCCL; "
                        + "point -Dferry.nccl.lib at NVIDIA's libnccl.so.2");
            }
            return new Located(path, c.how(), lookup);
        }
        throw new NcclException("no NCCL library (" + NAME + ") found; tried " + String.join(", ", tried)
                + ". Run scripts/install-nccl.sh (NVIDIA's nvidia-nccl-cu13 wheel into .ferry/wheels), pip install nvidia-nccl-cu13"
                + " (or -cu12), install NVIDIA's libnccl2 package, or name the library with -Dferry.nccl.lib=/path/to/libnccl.so.2"
                + " (FERRY_NCCL_LIB) or set NCCL_HOME");
    }
}
