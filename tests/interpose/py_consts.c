/*
 * py_consts.c -- writes, as Python assignments, the MPI handles and constants py_app.py
 * needs (run at build time: `make` turns its output into mpi_consts.py beside py_app).
 *
 * A Python MPI program gets these from mpi.h when its MPI binding is compiled (mpi4py
 * does); py_app.py calls MPI through ctypes, so they are taken from the same mpi.h here.
 * MPICH's handles are ints (its ABI); the build stops if they are not.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

_Static_assert(sizeof(MPI_Comm) == sizeof(int) && sizeof(MPI_Datatype) == sizeof(int) &&
                   sizeof(MPI_Op) == sizeof(int) && sizeof(MPI_Request) == sizeof(int),
               "py_app.py passes MPI handles as C ints (MPICH's ABI)");

#define H(name, value) printf("%s = %d\n", name, (int)(value))

int main(void) {
  printf("# written by py_consts (tests/interpose/py_consts.c) from this build's mpi.h\n");
  H("COMM_WORLD", MPI_COMM_WORLD);
  H("INT", MPI_INT);
  H("LONG", MPI_LONG);
  H("DOUBLE", MPI_DOUBLE);
  H("BYTE", MPI_BYTE);
  H("SUM", MPI_SUM);
  H("PROD", MPI_PROD);
  H("MAX", MPI_MAX);
  H("MIN", MPI_MIN);
  H("SUCCESS", MPI_SUCCESS);
  printf("IN_PLACE = %llu\n", (unsigned long long)(uintptr_t)MPI_IN_PLACE);
  printf("STATUS_IGNORE = %llu\n", (unsigned long long)(uintptr_t)MPI_STATUS_IGNORE);
  return 0;
}
