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
        String readme = Files.readString(Path.of("..", "README.md"));
        int begin = readme.indexOf(SettingsTable.BEGIN + "\n");
        int end = readme.indexOf(SettingsTable.END);
        assertTrue(begin >= 0 && end > begin, "README.md has the settings markers");
        String inReadme = readme.substring(begin + SettingsTable.BEGIN.length() + 1, end);
        assertEquals(SettingsTable.markdown(all), inReadme,
                "README.md's settings table is stale: replace it by the output of java -cp ... dev.ferry.tools.SettingsTable");
    }
}
