/* A binary module: reads the path of its JSON arguments file, answers JSON. */
#include <stdio.h>
int main(int argc, char **argv) {
    FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
    int n = 0;
    if (f) {
        while (fgetc(f) != EOF) n++;
        fclose(f);
    }
    printf("{\"changed\": false, \"args_bytes_seen\": %s}\n", n > 2 ? "true" : "false");
    return 0;
}
