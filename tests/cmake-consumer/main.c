/* Links the installed libuform_static.a through its public headers and calls into it. */
#include <uform/uform.h>

#include <stdio.h>

int main(void) {
    char const *name = uform_status_name(0);
    if (name == NULL || name[0] == '\0') {
        fputs("uform_status_name(0) answered no name\n", stderr);
        return 1;
    }
    printf("%s\n", name);
    return 0;
}
