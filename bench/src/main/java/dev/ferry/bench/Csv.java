// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The Ferry authors

package dev.ferry.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The CSV files the native programs write (the C reference {@code ferry-osu}, the C pipeline
 * {@code bench/experiments/staged-pipeline.c}): comma-separated, no quoting; blank lines and lines
 * starting with {@code #} are comments; the first other line names the columns. A row with another
 * number of fields than the header (a line cut short by a killed job) is left out.
 */
final class Csv {
    private Csv() {
    }

    /** One row: its fields by column name. */
    record Row(Map<String, Integer> columns, List<String> fields) {
        /** The field of {@code column}; {@link IllegalArgumentException} when the file has no such column. */
        String get(String column) {
            Integer i = columns.get(column);
            if (i == null) {
                throw new IllegalArgumentException("no column '" + column + "' (columns: " + columns.keySet() + ")");
            }
            return fields.get(i);
        }

        long getLong(String column) {
            return Long.parseLong(get(column).trim());
        }

        int getInt(String column) {
            return Integer.parseInt(get(column).trim());
        }

        double getDouble(String column) {
            return Double.parseDouble(get(column).trim());
        }
    }

    /** Every complete row of {@code file}, in order; none when it has no header. */
    static List<Row> read(Path file) throws IOException {
        List<Row> out = new ArrayList<>();
        Map<String, Integer> columns = null;
        for (String line : Files.readAllLines(file)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            List<String> f = List.of(line.split(",", -1));
            if (columns == null) {
                columns = new HashMap<>();
                for (int i = 0; i < f.size(); i++) {
                    columns.put(f.get(i).trim(), i);
                }
                continue;
            }
            if (f.size() == columns.size()) {
                out.add(new Row(columns, f));
            }
        }
        return out;
    }
}
