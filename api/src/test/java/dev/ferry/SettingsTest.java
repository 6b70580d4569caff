// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SettingsTest {
    private static final Setting<Long> SIZE = Setting.of("test", "ferry.unit.size", Setting.BYTES, 4L << 20, "a size");
    private static final Setting<Boolean> FLAG = Setting.of("test", "ferry.unit.flag", Setting.BOOLEAN, false, "a flag");
    private static final Setting<Integer> COUNT = Setting.of("test", "ferry.unit.count", Setting.INT, 4, "a count");
    private static final Setting<Long> BIG = Setting.of("test", "ferry.unit.big", Setting.LONG, 1L, "a long");
    private static final Setting<String> MODE = Setting.of("test", "ferry.unit.mode", Setting.choice("auto", "on", "off"), "auto", "a mode");
    private static final Setting<String> TEXT = Setting.of("test", "ferry.unit.text", Setting.STRING, null, "a text");
    private static final Setting<Double> SECONDS = Setting.derived("test", "ferry.unit.seconds", Setting.SECONDS, "from elsewhere", "seconds");

    private static Settings props(String... kv) {
        Map<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return Settings.of(m);
    }

    @Test
    void eachTypeParses() {
        assertEquals(64L << 10, props("ferry.unit.size", "64k").get(SIZE));
        assertEquals(3L << 30, props("ferry.unit.size", "3 GiB").get(SIZE));
        assertEquals(2L << 20, props("ferry.unit.size", "2m").get(SIZE));
        assertEquals(1000L, props("ferry.unit.size", " 1000 ").get(SIZE), "values are trimmed");
        assertTrue(props("ferry.unit.flag", "TRUE").get(FLAG));
        assertTrue(props("ferry.unit.flag", "yes").get(FLAG));
        assertFalse(props("ferry.unit.flag", "0").get(FLAG));
        assertEquals(-3, props("ferry.unit.count", "-3").get(COUNT));
        assertEquals(1L << 40, props("ferry.unit.big", Long.toString(1L << 40)).get(BIG));
        assertEquals("off", props("ferry.unit.mode", "Off").get(MODE), "choices ignore case and come back in lower case");
        assertEquals("/a b", props("ferry.unit.text", "/a b").get(TEXT));
        assertEquals(2.5, props("ferry.unit.seconds", "2.5").get(SECONDS));
        assertEquals(30.0, props("ferry.unit.seconds", "30s").get(SECONDS));
        assertEquals(0.5, props("ferry.unit.seconds", "500ms").get(SECONDS));
        assertEquals(120.0, props("ferry.unit.seconds", "2 min").get(SECONDS));
        assertEquals(3600.0, props("ferry.unit.seconds", "1h").get(SECONDS));
        assertEquals(ThreadLevel.FUNNELED, props("ferry.threads", "MPI_THREAD_FUNNELED").get(FerrySettings.THREADS));
    }

    @Test
    void defaultsApplyWhenNotGivenOrBlank() {
        Settings none = props("ferry.unit.size", "  ");
        assertEquals(4L << 20, none.get(SIZE), "a blank value counts as unset");
        assertFalse(none.isGiven(SIZE));
        assertNull(none.source(SIZE));
        assertNull(none.get(TEXT), "no default: null");
        assertNull(none.get(SECONDS), "derived: null, the reader computes it");
        assertEquals(1L << 30, none.get(FerrySettings.MAX_PIECE_BYTES));
        assertEquals("auto", none.get(FerrySettings.BACKEND));
    }

    @Test
    void badValuesNameTheKeyTheValueTheSourceAndWhatIsAccepted() {
        Object[][] bad = {{SIZE, "4 parsecs"}, {SIZE, "99999999999g"}, {FLAG, "maybe"}, {COUNT, "4.5"}, {COUNT, "3000000000"}, {BIG, "x"},
                          {MODE, "sometimes"}, {SECONDS, "-1"}, {SECONDS, "soon"}, {SECONDS, "30 parsecs"}, {SECONDS, "-2s"}, {FerrySettings.THREADS, "many"}};
        for (Object[] b : bad) {
            Setting<?> s = (Setting<?>) b[0];
            String v = (String) b[1];
            InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> props(s.key(), v).get(s), s + "=" + v);
            assertEquals(s.key(), e.key());
            assertEquals(v.trim(), e.value());
            assertTrue(e.getMessage().contains(s.key() + "='" + v.trim() + "'"), e.getMessage());
            assertTrue(e.getMessage().contains("-D" + s.key()), e.getMessage());
            assertTrue(e.getMessage().contains(s.parser().accepted()), e.getMessage());
        }
        InvalidSettingException env = assertThrows(InvalidSettingException.class,
                () -> Settings.of(Map.of(), Map.of("FERRY_UNIT_MODE", "loud")).get(MODE));
        assertTrue(env.getMessage().contains("from FERRY_UNIT_MODE"), env.getMessage());
        assertTrue(env.getMessage().contains("one of auto, on, off"), env.getMessage());
        assertTrue(env instanceof InvalidArgumentException, "a user's mistake in the arguments Ferry runs with");
    }

    @Test
    void validateReadsEverySettingAndNamesTheFirstValueNotAccepted() {
        Settings s = Settings.of(Map.of("ferry.unit.size", "1k", "ferry.unit.mode", "loud"));
        InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> s.validate(List.of(SIZE, FLAG, MODE, SECONDS)));
        assertEquals("ferry.unit.mode", e.key());
        props("ferry.unit.size", "1k").validate(List.of(SIZE, FLAG, MODE, SECONDS, COUNT));
    }

    @Test
    void propertyBeatsEnvironmentBeatsDefault() {
        assertEquals("FERRY_UNIT_SIZE", SIZE.environmentVariable());
        assertEquals("FERRY_STAGED_TEST_OFFERIPC", Setting.environmentVariable("ferry.staged.test.offerIpc"));
        Settings both = Settings.of(Map.of("ferry.unit.size", "1k"), Map.of("FERRY_UNIT_SIZE", "2k", "FERRY_UNIT_COUNT", "7"));
        assertEquals(1024L, both.get(SIZE));
        assertEquals("-Dferry.unit.size", both.source(SIZE));
        assertEquals(7, both.get(COUNT), "the environment variable when no property is given");
        assertEquals("FERRY_UNIT_COUNT", both.source(COUNT));
        assertFalse(both.get(FLAG), "the default when neither is");
        Settings blankProperty = Settings.of(Map.of("ferry.unit.size", ""), Map.of("FERRY_UNIT_SIZE", "2k"));
        assertEquals(2048L, blankProperty.get(SIZE), "a blank property does not hide the environment");
    }

    @Test
    void theProcessSettingsReadEachKeyOnce() {
        Setting<String> once = Setting.of("test", "ferry.unit.once", Setting.STRING, "default", "read once");
        System.setProperty(once.key(), "first");
        try {
            assertEquals("first", Settings.process().get(once));
            System.setProperty(once.key(), "second");
            assertEquals("first", Settings.process().get(once), "a later property changes nothing");
        } finally {
            System.clearProperty(once.key());
        }
    }

    @Test
    void apiRegistersItsSettingsWithUniqueKeys() {
        Set<String> keys = new HashSet<>();
        for (Setting<?> s : SettingsCatalog.all()) {
            assertTrue(keys.add(s.key()), "declared twice: " + s.key());
            assertFalse(s.meaning().isBlank(), s.key());
        }
        for (Setting<?> s : new FerrySettings().settings()) {
            assertTrue(keys.contains(s.key()), s.key() + " is registered");
        }
        assertTrue(keys.contains("ferry.maxPieceBytes"));
    }

    @Test
    void aKeyOutsideFerryIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Setting.of("test", "other.key", Setting.STRING, null, "x"));
    }
}
