// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.tools;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Prints the markdown table of every setting registered on the class path ({@link SettingsCatalog#all()}):
 * key, environment variable, default and meaning, api's settings first, then each module's in
 * name order, each module's in declaration order. README.md's settings table, between
 * {@code <!-- settings:begin -->} and {@code <!-- settings:end -->}, is this output; a backend
 * README's table between the same markers is the output for its key prefix.
 */
public final class SettingsTable {
    /** The line before the generated table in README.md. */
    public static final String BEGIN = "<!-- settings:begin -->";
    /** The line after it. */
    public static final String END = "<!-- settings:end -->";

    private SettingsTable() {
    }

    /** Every setting, or with key prefixes as arguments ({@code ferry.staged.}, ...) those only. */
    public static void main(String[] args) {
        System.out.print(markdown(args.length == 0 ? forUsers(SettingsCatalog.all()) : withPrefix(List.of(args))));
    }

    /** The settings whose keys start with one of {@code prefixes} (a backend README's table: {@code ferry.staged.}), tests' switches left out. */
    public static List<Setting<?>> withPrefix(List<String> prefixes) {
        return forUsers(SettingsCatalog.all()).stream().filter(s -> prefixes.stream().anyMatch(s.key()::startsWith)).toList();
    }

    /** {@code settings} without the switches of Ferry's own tests ({@link Setting#isForTests()}). */
    public static List<Setting<?>> forUsers(List<Setting<?>> settings) {
        return settings.stream().filter(s -> !s.isForTests()).toList();
    }

    /** The table of {@code settings}, one row each, lines ending in {@code \n}. */
    public static String markdown(List<Setting<?>> settings) {
        List<Setting<?>> sorted = new ArrayList<>(settings);
        sorted.sort(Comparator.comparing((Setting<?> s) -> !s.module().equals("api")).thenComparing(Setting::module));
        StringBuilder sb = new StringBuilder();
        sb.append("| Setting | Environment variable | Default | Meaning |\n");
        sb.append("|---|---|---|---|\n");
        for (Setting<?> s : sorted) {
            sb.append("| `").append(s.key()).append("` | `").append(s.environmentVariable()).append("` | ")
                    .append(cell(s.defaultText())).append(" | ").append(cell(s.meaning())).append(" |\n");
        }
        return sb.toString();
    }

    private static String cell(String text) {
        return text.replace("|", "\\|").replace("\n", " ");
    }
}
