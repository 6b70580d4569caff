// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class OptionsTest {

    @Test
    void defaults() {
        Options o = Options.parse();
        assertEquals(Path.of("ferry-demo-out"), o.out());
        assertEquals("auto", o.mode());
        assertEquals(1L << 20, o.floats());
        assertEquals(1200, o.width());
        assertEquals(800, o.height());
        assertArrayEquals(new long[] {8, 65536, 4L << 20, 64L << 20}, o.sizes());
    }

    @Test
    void everyOption() {
        Options o = Options.parse("--out", "x/y", "--mode", "HOST", "--floats", "4M", "--shift", "-1.5", "--seed", "9",
                "--size", "640x480", "--max-iter", "1000", "--ipc-ints", "64K", "--sizes", "8, 1KiB,2MB", "--reps", "50");
        assertEquals(new Options(Path.of("x/y"), "host", 4L << 20, -1.5f, 9, 640, 480, 1000, 65536, new long[] {8, 1024, 2L << 20}, 50), o);
    }

    @Test
    void badOptionsSayWhatIsWrongAndShowTheUsage() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Options.parse("--nope", "1"));
        assertTrue(e.getMessage().startsWith("unknown option --nope") && e.getMessage().contains("--size WxH"), e.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Options.parse("--out")).getMessage().contains("needs a value"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Options.parse("--size", "100")).getMessage().contains("WIDTHxHEIGHT"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Options.parse("--floats", "0")).getMessage().contains("positive"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Options.parse("--floats", "x")).getMessage().contains("not a valid number"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Options.parse("--mode", "gpux")).getMessage().contains("auto, device, gpu or host"));
    }

    @Test
    void sizesAreCopied() {
        Options o = Options.parse();
        o.sizes()[0] = 99;
        assertEquals(8, o.sizes()[0]);
    }

    /** ./ferry checks the demo's options before it builds anything: its list is the one {@link Options} takes. */
    @Test
    void theLauncherKnowsEveryOption() throws IOException {
        Matcher m = Pattern.compile("(?m)^DEMO_OPTIONS=\"([^\"]*)\"").matcher(Files.readString(Path.of("..", "ferry")));
        assertTrue(m.find(), "DEMO_OPTIONS in ./ferry");
        Set<String> launcher = new TreeSet<>(Arrays.asList(m.group(1).trim().split("\\s+")));
        launcher.add("--out"); // an option of ./ferry demo itself, passed on
        Set<String> usage = new TreeSet<>();
        Matcher u = Pattern.compile("(?m)^\\s+(--[a-z-]+) ").matcher(Options.usage());
        while (u.find()) {
            usage.add(u.group(1));
        }
        assertEquals(usage, launcher);
        for (String option : usage) {
            String value = option.equals("--mode") ? "host" : option.equals("--size") ? "10x10" : option.equals("--out") ? "x" : "8";
            Options.parse(option, value); // each takes a value
        }
    }
}
