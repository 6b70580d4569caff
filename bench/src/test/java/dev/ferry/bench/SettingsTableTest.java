// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferry.spi.Setting;
import dev.ferry.spi.SettingsCatalog;
import dev.ferry.tools.SettingsTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * README.md's settings table is SettingsTable's output over every module's settings (bench has
 * every backend on its class path); regenerate it with {@code dev.ferry.tools.SettingsTable}.
 */
class SettingsTableTest {
    @Test
    void readmeTableIsTheGeneratedOne() throws IOException {
        List<Setting<?>> all = SettingsCatalog.all();
        for (String module : List.of("api", "mpi-ffm", "backend-ompi", "backend-mvapich", "backend-staged", "backend-nccl")) {
            assertTrue(all.stream().anyMatch(s -> s.module().equals(module)), module + " registers its settings");
        }
        assertTable(Path.of("..", "README.md"), SettingsTable.markdown(SettingsTable.forUsers(all)), "");
    }

    /** The backend READMEs' tables: the settings of the backend's own modules. */
    @Test
    void backendReadmeTablesAreTheGeneratedOnes() throws IOException {
        for (String backend : List.of("staged", "mvapich", "ompi", "nccl")) {
            Path readme = Path.of("..", "backend-" + backend, "README.md");
            String prefix = "ferry." + backend + ".";
            assertTable(readme, SettingsTable.markdown(SettingsTable.withPrefix(List.of(prefix))), " " + prefix);
        }
    }

    private static void assertTable(Path readme, String expected, String args) throws IOException {
        String text = Files.readString(readme);
        int begin = text.indexOf(SettingsTable.BEGIN + "\n");
        int end = text.indexOf(SettingsTable.END);
        assertTrue(begin >= 0 && end > begin, readme + " has the settings markers");
        assertEquals(expected, text.substring(begin + SettingsTable.BEGIN.length() + 1, end),
                readme + "'s settings table is stale: replace it by the output of java -cp ... dev.ferry.tools.SettingsTable" + args);
    }
}
