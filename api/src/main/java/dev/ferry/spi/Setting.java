// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.spi;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * One declared setting of Ferry: its key ({@code ferry.staged.chunk}), the environment variable
 * made from it ({@code FERRY_STAGED_CHUNK}), how its text is parsed, its default, a one-line
 * meaning and the module that declares it. Each module declares its settings as constants in one
 * place and lists them through a {@link SettingsCatalog}; values are read through
 * {@link dev.ferry.Settings}.
 *
 * @param <T> the parsed type
 */
public final class Setting<T> {
    private final String key;
    private final Parser<T> parser;
    private final T defaultValue;
    private final String defaultText;
    private final String meaning;
    private final String module;
    /** A switch for Ferry's own tests (host test modes, pretended nodes): checked like any, left out of the users' tables. */
    private final boolean forTests;

    /** Parses one setting's text (already trimmed, never blank) into its value. */
    public record Parser<T>(String accepted, Function<String, T> parse) {
        /**
         * The value of {@code text}, or {@link IllegalArgumentException} when it is not accepted.
         */
        public T apply(String text) {
            return parse.apply(text);
        }
    }

    private Setting(String key, Parser<T> parser, T defaultValue, String defaultText, String meaning, String module) {
        this(key, parser, defaultValue, defaultText, meaning, module, false);
    }

    private Setting(String key, Parser<T> parser, T defaultValue, String defaultText, String meaning, String module, boolean forTests) {
        if (!key.startsWith("ferry.") || key.isBlank()) {
            throw new IllegalArgumentException("a setting key starts with 'ferry.': " + key);
        }
        this.key = key;
        this.parser = Objects.requireNonNull(parser);
        this.defaultValue = defaultValue;
        this.defaultText = Objects.requireNonNull(defaultText);
        this.meaning = Objects.requireNonNull(meaning);
        this.module = Objects.requireNonNull(module);
        this.forTests = forTests;
    }

    /**
     * A switch for Ferry's own tests (a host-memory mode of a GPU path, pretended nodes): read and
     * checked like any setting, but not a user's setting, so left out of the documented tables
     * ({@code docs/testing.md} lists them).
     */
    public static <T> Setting<T> forTests(String module, String key, Parser<T> parser, T defaultValue, String meaning) {
        return new Setting<>(key, parser, defaultValue, defaultValue == null ? "unset" : "`" + display(defaultValue) + "`", meaning, module, true);
    }

    /** True for a switch of Ferry's own tests ({@link #forTests}). */
    public boolean isForTests() {
        return forTests;
    }

    /**
     * A setting with a fixed default ({@code null}: unset unless given), shown in tables as
     * the default's text.
     */
    public static <T> Setting<T> of(String module, String key, Parser<T> parser, T defaultValue, String meaning) {
        return new Setting<>(key, parser, defaultValue, defaultValue == null ? "unset" : "`" + display(defaultValue) + "`", meaning, module);
    }

    /**
     * A setting whose default depends on other settings or on the machine: {@link dev.ferry.Settings#get}
     * returns {@code null} when it is not given, and its reader computes the default described by
     * {@code defaultText}.
     */
    public static <T> Setting<T> derived(String module, String key, Parser<T> parser, String defaultText, String meaning) {
        return new Setting<>(key, parser, null, defaultText, meaning, module);
    }

    private static String display(Object v) {
        if (v instanceof Long n && n >= 1024) return bytes(n);
        if (v instanceof Double d && d == Math.rint(d)) return Long.toString(d.longValue());
        if (v instanceof Enum<?> e) return e.name().toLowerCase(Locale.ROOT);
        return v.toString();
    }

    /** The key, {@code ferry.x.y}: the system property's name. */
    public String key() {
        return key;
    }

    /** The environment variable read when the property is not set: {@code ferry.x.y} -> {@code FERRY_X_Y}. */
    public String environmentVariable() {
        return environmentVariable(key);
    }

    /** The environment variable made from {@code key}. */
    public static String environmentVariable(String key) {
        return key.toUpperCase(Locale.ROOT).replace('.', '_');
    }

    /** How the text is parsed. */
    public Parser<T> parser() {
        return parser;
    }

    /** The value when the setting is not given; {@code null} when unset or derived. */
    public T defaultValue() {
        return defaultValue;
    }

    /** The default as shown to users. */
    public String defaultText() {
        return defaultText;
    }

    /** What the setting does, one line. */
    public String meaning() {
        return meaning;
    }

    /** The module that declares it ({@code api}, {@code backend-staged}, ...). */
    public String module() {
        return module;
    }

    @Override
    public String toString() {
        return key;
    }

    // ---- parsers --------------------------------------------------------------------------

    /** Any text, trimmed. */
    public static final Parser<String> STRING = new Parser<>("any text", s -> s);

    /** {@code true}/{@code yes}/{@code on}/{@code 1} or {@code false}/{@code no}/{@code off}/{@code 0}, case ignored. */
    public static final Parser<Boolean> BOOLEAN = new Parser<>("true or false", s -> switch (s.toLowerCase(Locale.ROOT)) {
        case "true", "yes", "on", "1" -> true;
        case "false", "no", "off", "0" -> false;
        default -> throw new IllegalArgumentException();
    });

    /** A decimal {@code int}. */
    public static final Parser<Integer> INT = new Parser<>("a whole number", Integer::valueOf);

    /** A decimal {@code long}. */
    public static final Parser<Long> LONG = new Parser<>("a whole number", Long::valueOf);

    /**
     * A non-negative number of seconds, with an optional unit: {@code 30}, {@code 2.5},
     * {@code 30s}, {@code 500ms}, {@code 2min}, {@code 1h}.
     */
    public static final Parser<Double> SECONDS = new Parser<>("a number of seconds, 0 or more, with an optional unit ms, s, min or h "
            + "(examples: 30, 2.5, 30s, 500ms, 2min)", Setting::parseSeconds);

    /** Parses "30", "2.5", "30s", "500ms", "2min", "1h" into seconds; {@link IllegalArgumentException} otherwise. */
    public static double parseSeconds(String v) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        double unit = 1;
        String[][] units = {{"ms", "0.001"}, {"min", "60"}, {"sec", "1"}, {"s", "1"}, {"h", "3600"}};
        for (String[] u : units) {
            if (s.endsWith(u[0])) {
                unit = Double.parseDouble(u[1]);
                s = s.substring(0, s.length() - u[0].length()).trim();
                break;
            }
        }
        double d = Double.parseDouble(s) * unit;
        if (!(d >= 0) || Double.isInfinite(d)) {
            throw new IllegalArgumentException(v + " is not a number of seconds, 0 or more");
        }
        return d;
    }

    /** A byte size with an optional suffix: {@code 4MiB}, {@code 64k}, {@code 1g}, {@code 1048576}. */
    public static final Parser<Long> BYTES = new Parser<>("a size in bytes (examples: 4MiB, 64k, 1g, 1048576)", Setting::parseBytes);

    /** One of {@code choices}, case ignored; the value is the choice in lower case. */
    public static Parser<String> choice(String... choices) {
        List<String> list = List.of(choices);
        String accepted = "one of " + String.join(", ", list);
        return new Parser<>(accepted, s -> {
            String v = s.toLowerCase(Locale.ROOT);
            if (!list.contains(v)) throw new IllegalArgumentException();
            return v;
        });
    }

    /** A constant of {@code type}, named in any case. */
    public static <E extends Enum<E>> Parser<E> choice(Class<E> type) {
        StringBuilder accepted = new StringBuilder("one of ");
        for (E e : type.getEnumConstants()) {
            accepted.append(e.ordinal() == 0 ? "" : ", ").append(e.name().toLowerCase(Locale.ROOT));
        }
        return new Parser<>(accepted.toString(), s -> Enum.valueOf(type, s.toUpperCase(Locale.ROOT)));
    }

    /** Parses "4MiB", "64k", "3 GiB", "1g", "1048576"; {@link IllegalArgumentException} otherwise. */
    public static long parseBytes(String v) {
        String s = v.trim().toLowerCase(Locale.ROOT).replace("_", "");
        long mul = 1;
        String[][] units = {{"gib", "30"}, {"mib", "20"}, {"kib", "10"}, {"gb", "30"}, {"mb", "20"}, {"kb", "10"}, {"g", "30"}, {"m", "20"}, {"k", "10"}, {"b", "0"}};
        for (String[] u : units) {
            if (s.endsWith(u[0])) {
                mul = 1L << Integer.parseInt(u[1]);
                s = s.substring(0, s.length() - u[0].length()).trim();
                break;
            }
        }
        try {
            return Math.multiplyExact(Long.parseLong(s), mul);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(v + " is too large", e);
        }
    }

    /** "4 MiB", "64 KiB", "1027 B". */
    public static String bytes(long n) {
        if (n >= (1L << 30) && n % (1L << 30) == 0) return (n >> 30) + " GiB";
        if (n >= (1L << 20) && n % (1L << 20) == 0) return (n >> 20) + " MiB";
        if (n >= (1L << 10) && n % (1L << 10) == 0) return (n >> 10) + " KiB";
        return n + " B";
    }
}
