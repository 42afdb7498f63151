! reduce_f.f90 -- an unmodified Fortran MPI program for run.sh: MPI_Ireduce + MPI_Wait and
! MPI_Reduce of integers and doubles to every root, each checked against the exact sum.
! Prints "FAIL ..." per wrong value, "ALL PASSED" at rank 0.
! `use mpi`, not `use mpi_f08`: MPICH 4.0.2's mpi_f08 procedures call PMPI_Init and the
! internal reduction entry points directly, so no C profiling layer sees them (dred(3)).
program reduce_f
  use mpi
  implicit none
  integer, parameter :: n = 300
  integer :: rank, nproc, root, i, nfail, allfail, req, ierr
  integer :: st(MPI_STATUS_SIZE)
  integer :: ia(n), ib(n)
  double precision :: da(n), db(n)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  nfail = 0
  do root = 0, nproc - 1
    do i = 1, n
      ia(i) = rank * 3 + i
      da(i) = dble(rank + i)
    end do
    call MPI_Ireduce(ia, ib, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, req, ierr)
    call MPI_Wait(req, st, ierr)
    call MPI_Reduce(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (rank == root) then
      do i = 1, n
        if (ib(i) /= 3 * nproc * (nproc - 1) / 2 + nproc * i) then
          print '(a,i0,a,i0)', 'FAIL ireduce root ', root, ' element ', i
          nfail = nfail + 1
          exit
        end if
        if (db(i) /= dble(nproc * (nproc - 1) / 2 + nproc * i)) then
          print '(a,i0,a,i0)', 'FAIL reduce root ', root, ' element ', i
          nfail = nfail + 1
          exit
        end if
      end do
    end if
  end do
  call MPI_Allreduce(nfail, allfail, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. allfail == 0) print '(a)', 'ALL PASSED'
  call MPI_Finalize(ierr)
end program reduce_f
