// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import dev.ferry.spi.Setting;
import java.util.Collection;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The values of Ferry's {@link Setting}s: for each key the system property ({@code -Dferry.x.y}),
 * else the environment variable ({@code FERRY_X_Y}), else the setting's default. Blank values
 * count as unset and values are trimmed. {@link #process()} is the process's one instance: each
 * key is read once, at its first use, and keeps that value for the life of the process (setting
 * a property later changes nothing). Tests build their own from maps with {@link #of(Map, Map)}.
 */
public final class Settings {
    private static volatile Settings process;

    private final Function<String, String> properties;
    private final Function<String, String> environment;
    private final Map<String, Object> values = new ConcurrentHashMap<>();
    private static final Object UNSET = new Object();

    private Settings(Function<String, String> properties, Function<String, String> environment) {
        this.properties = properties;
        this.environment = environment;
    }

    /** The process's settings: system properties, then environment variables. */
    public static Settings process() {
        Settings s = process;
        if (s == null) {
            synchronized (Settings.class) {
                if (process == null) {
                    process = new Settings(System::getProperty, System::getenv);
                }
                s = process;
            }
        }
        return s;
    }

    /**
     * Settings read from {@code properties} (keys {@code ferry.x.y}), then {@code environment}
     * (keys {@code FERRY_X_Y}), then the defaults; for tests and tools.
     */
    public static Settings of(Map<String, String> properties, Map<String, String> environment) {
        Map<String, String> p = Map.copyOf(properties);
        Map<String, String> e = Map.copyOf(environment);
        return new Settings(p::get, e::get);
    }

    /** Settings from {@code properties} only (no environment). */
    public static Settings of(Map<String, String> properties) {
        return of(properties, Map.of());
    }

    /**
     * The value of {@code setting}: given, else its default ({@code null} for a setting without
     * one, see {@link Setting#derived}).
     *
     * @throws InvalidSettingException when the given text is not accepted
     */
    @SuppressWarnings("unchecked")
    public <T> T get(Setting<T> setting) {
        Object v = values.computeIfAbsent(setting.key(), k -> {
            T given = read(setting);
            return given != null ? given : setting.defaultValue() != null ? setting.defaultValue() : UNSET;
        });
        return v == UNSET ? null : (T) v;
    }

    /**
     * Reads every one of {@code settings} once, so that a value given but not accepted is found
     * now rather than where the setting is first used.
     *
     * @throws InvalidSettingException for the first value given that is not accepted
     */
    public void validate(Collection<Setting<?>> settings) {
        for (Setting<?> s : settings) {
            get(s);
        }
    }

    /** Whether {@code setting} is given (by property or environment), not defaulted. */
    public boolean isGiven(Setting<?> setting) {
        return source(setting) != null;
    }

    /**
     * Where {@code setting}'s value comes from: {@code -Dferry.x.y}, {@code FERRY_X_Y}, or
     * {@code null} when not given.
     */
    public String source(Setting<?> setting) {
        if (text(properties, setting.key()) != null) return "-D" + setting.key();
        if (text(environment, setting.environmentVariable()) != null) return setting.environmentVariable();
        return null;
    }

    /** The text given for {@code setting} (trimmed), or {@code null}. */
    public String text(Setting<?> setting) {
        String v = text(properties, setting.key());
        return v != null ? v : text(environment, setting.environmentVariable());
    }

    private <T> T read(Setting<T> setting) {
        String v = text(setting);
        if (v == null) return null;
        try {
            return Objects.requireNonNull(setting.parser().apply(v));
        } catch (RuntimeException e) {
            throw new InvalidSettingException(setting.key(), v, source(setting), setting.parser().accepted());
        }
    }

    private static String text(Function<String, String> source, String name) {
        String v = source.apply(name);
        return v == null || v.isBlank() ? null : v.trim();
    }
}
