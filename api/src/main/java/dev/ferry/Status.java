package dev.ferry;

/**
 * What a completed receive learned: the actual source and tag, and how many bytes arrived.
 *
 * @param source    rank that sent the message
 * @param tag       tag it carried
 * @param byteCount bytes received
 */
public record Status(int source, int tag, long byteCount) {
    /** Elements of {@code type} received; an exception if a partial element arrived. */
    public long count(DataType type) {
        if (byteCount % type.size() != 0) {
            throw new DataTypeMismatchException(byteCount + " bytes received is not a whole number of " + type);
        }
        return byteCount / type.size();
    }
}
