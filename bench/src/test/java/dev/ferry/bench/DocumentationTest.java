// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The markdown files of the repository say what is there: every relative link resolves (to a file,
 * and to a heading when it names one), every repository path written as code ({@code `scripts/setup`},
 * {@code `reliability/.../SlurmIT.java`}, where {@code ...} stands for any folders) exists, and every
 * {@code ferry.*} name is a setting of the catalog (bench has every module on its class path), a
 * prefix of settings, or a property the code reads (the test kit's {@code ferry.test.*}). Also: the
 * BOM manages exactly the modules that are published.
 */
class DocumentationTest {
    static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern CODE_PATH = Pattern.compile("`([A-Za-z0-9_.\\-]+(?:/[A-Za-z0-9_.*\\-]+)+/?)`");
    private static final Pattern FERRY_NAME = Pattern.compile("(?<![\\w.])ferry\\.[a-zA-Z]\\w*(?:\\.[a-zA-Z]\\w*)*");
    private static final Pattern HEADING = Pattern.compile("^#+\\s+(.*)$", Pattern.MULTILINE);
    private static final Pattern FENCE = Pattern.compile("```.*?```", Pattern.DOTALL);

    /** Every markdown file of the repository (not of build output or local state). */
    static List<Path> markdownFiles() throws IOException {
        try (Stream<Path> s = Files.walk(REPO)) {
            return s.filter(p -> p.toString().endsWith(".md") && Files.isRegularFile(p))
                    .filter(p -> {
                        Path rel = REPO.relativize(p);
                        for (Path part : rel) {
                            String n = part.toString();
                            if (n.equals("target") || n.startsWith(".")) return false;
                        }
                        return true;
                    })
                    .sorted().toList();
        }
    }

    @Test
    void everyLinkAndPathResolves() throws IOException {
        List<String> broken = new ArrayList<>();
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<Path> files = markdownFiles();
        assertTrue(files.contains(REPO.resolve("README.md")) && files.contains(REPO.resolve("docs/reliability.md")), "found the markdown files: " + files);
        for (Path md : files) {
            String text = Files.readString(md);
            String where = REPO.relativize(md).toString();
            Matcher m = LINK.matcher(text);
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("[a-z]+:.*")) continue; // https:, mailto:
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                Path resolved = file.isEmpty() ? md : md.getParent().resolve(file).normalize();
                if (!Files.exists(resolved)) {
                    broken.add(where + ": link (" + target + "): no " + REPO.relativize(resolved));
                } else if (hash >= 0 && resolved.toString().endsWith(".md")
                        && !anchors.computeIfAbsent(resolved, DocumentationTest::anchors).contains(target.substring(hash + 1))) {
                    broken.add(where + ": link (" + target + "): no such heading in " + REPO.relativize(resolved));
                }
            }
            Matcher c = CODE_PATH.matcher(text);
            while (c.find()) {
                String path = c.group(1);
                String first = path.substring(0, path.indexOf('/'));
                // paths of the repository only (not of build output, local state or other machines)
                if (first.startsWith(".") || !Files.isDirectory(REPO.resolve(first)) || path.contains("/target/")) continue;
                if (!matches(REPO, path) && !matches(md.getParent(), path)) {
                    broken.add(where + ": `" + path + "` does not exist");
                }
            }
        }
        assertEquals(List.of(), broken, "links and paths in the markdown files that lead nowhere");
    }

    @Test
    void everySettingNamedExists() throws IOException {
        Set<String> keys = SettingsCatalog.all().stream().map(Setting::key).collect(Collectors.toSet());
        assertTrue(keys.contains("ferry.backend") && keys.contains("ferry.staged.progressThread") && keys.contains("ferry.nccl.inner"),
                "the catalog has every module's settings");
        String code = sourceText();
        List<String> unknown = new ArrayList<>();
        for (Path md : markdownFiles()) {
            // a dated result records the commands as they ran then: settings since removed stay in it
            if (md.startsWith(REPO.resolve("bench/results")) && md.getFileName().toString().matches("\\d{4}-\\d{2}-\\d{2}-.*")) continue;
            Matcher m = FERRY_NAME.matcher(Files.readString(md));
            Set<String> seen = new TreeSet<>();
            while (m.find()) {
                String name = m.group();
                if (!seen.add(name) || keys.contains(name) || keys.stream().anyMatch(k -> k.startsWith(name + "."))) continue;
                // not a setting: a property the code reads by that name (ferry.test.np, ...)
                if (!code.contains("\"" + name + "\"") && !code.contains("<" + name + ">") && !code.contains("-D" + name + "=")) {
                    unknown.add(REPO.relativize(md) + ": " + name);
                }
            }
        }
        assertEquals(List.of(), unknown, "names of settings that no module declares and no code reads");
    }

    @Test
    void theBomManagesEveryPublishedModule() throws IOException {
        String root = Files.readString(REPO.resolve("pom.xml"));
        Set<String> published = new TreeSet<>();
        Matcher m = Pattern.compile("<module>([^<]+)</module>").matcher(root);
        while (m.find()) {
            String pom = Files.readString(REPO.resolve(m.group(1)).resolve("pom.xml"));
            if (pom.contains("<packaging>pom</packaging>") || pom.contains("<maven.deploy.skip>true</maven.deploy.skip>")) continue;
            published.add(artifactId(pom));
        }
        assertTrue(published.contains("ferry-api") && !published.contains("ferry-bench"), "published: " + published);
        Set<String> managed = new TreeSet<>();
        Matcher d = Pattern.compile("<artifactId>([^<]+)</artifactId>").matcher(Files.readString(REPO.resolve("bom/pom.xml")));
        while (d.find()) {
            if (!d.group(1).equals("ferry-bom") && !d.group(1).startsWith("maven-")) managed.add(d.group(1));
        }
        assertEquals(published, managed, "ferry-bom manages exactly the published modules");
    }

    /** A module's own artifactId: the first one after its parent element. */
    private static String artifactId(String pom) {
        String rest = pom.contains("</parent>") ? pom.substring(pom.indexOf("</parent>")) : pom;
        Matcher m = Pattern.compile("<artifactId>([^<]+)</artifactId>").matcher(rest);
        assertTrue(m.find(), "an artifactId");
        return m.group(1);
    }

    /** Whether {@code path} (with {@code *} and {@code ...}, any folders) names something under {@code base}. */
    private static boolean matches(Path base, String path) throws IOException {
        if (!path.contains("*") && !path.contains("...")) {
            return Files.exists(base.resolve(path));
        }
        String glob = path.replace("...", "**");
        PathMatcher pm = FileSystems.getDefault().getPathMatcher("glob:" + glob);
        String fixed = glob.substring(0, glob.indexOf('*'));
        Path start = base.resolve(fixed.contains("/") ? fixed.substring(0, fixed.lastIndexOf('/')) : "");
        if (!Files.isDirectory(start)) return false;
        try (Stream<Path> s = Files.walk(start)) {
            return s.anyMatch(p -> pm.matches(base.relativize(p)));
        }
    }

    /** The headings' anchors of a markdown file, as GitHub makes them. */
    static Set<String> anchors(Path md) {
        String text;
        try {
            text = FENCE.matcher(Files.readString(md)).replaceAll("");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Set<String> out = new HashSet<>();
        Map<String, Integer> count = new HashMap<>();
        Matcher m = HEADING.matcher(text);
        while (m.find()) {
            String h = m.group(1).replace("`", "").replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1");
            String slug = h.strip().toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N}_\\- ]", "").replace(' ', '-');
            int n = count.merge(slug, 1, Integer::sum) - 1;
            out.add(n == 0 ? slug : slug + "-" + n);
        }
        return out;
    }

    /** The text of every source file, POM and script, where the code reads its properties. */
    private static String sourceText() throws IOException {
        StringBuilder sb = new StringBuilder();
        try (Stream<Path> s = Files.walk(REPO)) {
            for (Path p : s.filter(Files::isRegularFile).filter(p -> {
                String rel = REPO.relativize(p).toString();
                return !rel.contains("/target/") && !rel.startsWith(".") && !rel.contains("/.")
                        && (rel.endsWith(".java") || rel.endsWith("pom.xml") || rel.endsWith(".sh") || rel.equals("ferry") || rel.startsWith("scripts/"));
            }).toList()) {
                sb.append(Files.readString(p)).append('\n');
            }
        }
        return sb.toString();
    }
}
