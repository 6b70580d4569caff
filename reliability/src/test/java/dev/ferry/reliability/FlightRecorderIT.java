package dev.ferry.reliability;

import dev.ferry.testing.MpiJob;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The flight recorder on real ranks (3, {@code ferry.timeout=3}) under mpirun and MPICH's
 * mpiexec: each {@link HangCase} ends within the watchdog's bound with a hang report whose first
 * line names the rank and the call. Every case runs on ompi/openmpi; the other pairs run a
 * subset, so that every backend (ompi, mvapich, staged over each) and every case runs at least
 * twice; JFR ({@code -XX:StartFlightRecording}, read back with {@code jfr print}) on one case per
 * launcher family. Under srun: {@code SlurmIT}.
 *
 * <p>A lost rank under MPICH's mpiexec: Hydra SIGKILLs every rank at once, so the job runs with
 * {@code -disable-auto-cleanup} and the survivors' watchdog writes the report.
 */
class FlightRecorderIT {
    /** The cases each pair runs, and whether the first of them records JFR. */
    static final Map<String, List<HangCase>> CASES = Map.of(
            "ompi/openmpi", List.of(HangCase.values()),
            "mvapich/mpich", List.of(HangCase.SKIP, HangCase.ROOT, HangCase.DEAD),
            "staged/openmpi", List.of(HangCase.ORDER, HangCase.SEND),
            "staged/mpich", List.of(HangCase.COUNT, HangCase.SEND));

    @TestFactory
    List<DynamicNode> hangReports() {
        List<DynamicNode> out = new ArrayList<>();
        for (Pair pair : Pair.selected()) {
            List<HangCase> cases = CASES.getOrDefault(pair.id(), List.of());
            if (cases.isEmpty()) continue;
            List<DynamicNode> tests = new ArrayList<>();
            for (HangCase c : cases) {
                boolean jfr = c == HangCase.SKIP && (pair.backend().equals("ompi") || pair.backend().equals("mvapich"));
                tests.add(DynamicTest.dynamicTest(c.title() + (jfr ? "; jfr print reads the JFR recording" : ""), () -> {
                    pair.unavailable().ifPresent(reason -> dev.ferry.testing.Required.assume(pair.backend(), false, () -> reason));
                    MpiJob job = c.configure(pair.job("flight-" + c.id(), HangCase.RANKS), jfr);
                    if (pair.family() == MpiJob.Family.MPICH && c == HangCase.DEAD) {
                        job.launcherOptions("-disable-auto-cleanup");
                    }
                    c.check(pair.id(), pair.backend(), job, jfr);
                }));
            }
            out.add(DynamicContainer.dynamicContainer(pair.id(), tests.stream()));
        }
        return out;
    }
}
